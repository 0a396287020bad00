package lodge

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// SessionAttachOptions configures an attach
// (GET /v1/sessions/{ref}/attach).
type SessionAttachOptions struct {
	Cols, Rows int    // resize on attach (PTY sessions); 0: leave it
	Since      *int64 // replay from this offset (Offset(n)); nil: the whole ring
	ReadOnly   bool   // input, resize and signal are refused (forbidden)
	// Pace holds the process back rather than skip output: while every
	// client is behind and this one still takes output, the process waits
	// for it, as for a terminal (default false). Not with ReadOnly: the
	// daemon refuses the attach (*BadRequestError).
	Pace bool

	OnStdout func(chunk []byte)
	OnStderr func(chunk []byte)
	// OnChunk gets every output chunk with its stream and offset, after
	// OnStdout/OnStderr.
	OnChunk func(c Chunk)
	// OnLive is called once, where the first replay ends: what follows is
	// live output (offset = replayTo).
	OnLive func(offset int64)
	// OnGap reports output lost from the ring before it could be
	// delivered (from, to); with StrictGaps the attach fails with
	// *GapError instead.
	OnGap      func(from, to int64)
	StrictGaps bool
	OnExit     func(exit ExitInfo)
	OnError    func(err error) // errors that leave the attach open
	// OnReconnect is called after each automatic reconnect, with the
	// offset it resumed from. NoResume turns reconnecting off.
	OnReconnect func(attempt int, since int64)
	NoResume    bool
}

// Offset is a helper for SessionAttachOptions.Since.
func Offset(n int64) *int64 { return &n }

// Chunk is one piece of output.
type Chunk struct {
	Stream string // "stdout" or "stderr"
	Offset int64
	Data   []byte
}

// SessionAttachHandle is an attached client of a session. When its
// connection drops it reconnects with since= the next offset it needs and
// delivers every byte once; methods are safe for concurrent use.
type SessionAttachHandle struct {
	s      *Sandbox
	ref    string
	o      SessionAttachOptions
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	conn     *websocket.Conn
	maxMsg   int
	detached bool

	session    *Session
	replayFrom int64
	replayTo   int64
	next       atomic.Int64
	reconnects atomic.Int32
	live       chan struct{}

	done chan struct{}
	exit ExitInfo
	err  error
}

// AttachSession attaches to a session by id or name and returns once the
// daemon accepted (its attached message). Output starts with the replay
// of the ring. Cancelling ctx detaches.
func (s *Sandbox) AttachSession(ctx context.Context, idOrName string, o SessionAttachOptions) (*SessionAttachHandle, error) {
	hctx, cancel := context.WithCancel(ctx)
	h := &SessionAttachHandle{s: s, ref: idOrName, o: o, ctx: hctx, cancel: cancel,
		maxMsg: s.maxMsg, live: make(chan struct{}), done: make(chan struct{})}
	since := int64(-1)
	if o.Since != nil {
		since = *o.Since
	}
	m, err := h.connect(since, true)
	if err != nil {
		cancel()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	h.session = m.Session
	h.replayFrom, h.replayTo = m.ReplayFrom, m.ReplayTo
	h.next.Store(m.ReplayFrom)
	if since >= 0 {
		h.next.Store(since)
	}
	go h.run()
	return h, nil
}

// connect dials and reads the attached message.
func (h *SessionAttachHandle) connect(since int64, first bool) (*serverMsg, error) {
	q := url.Values{}
	if first && h.o.Cols > 0 {
		q.Set("cols", strconv.Itoa(h.o.Cols))
	}
	if first && h.o.Rows > 0 {
		q.Set("rows", strconv.Itoa(h.o.Rows))
	}
	if since >= 0 {
		q.Set("since", strconv.FormatInt(since, 10))
	}
	if h.o.ReadOnly {
		q.Set("readOnly", "1")
	}
	if h.o.Pace {
		q.Set("pace", "1")
	}
	path := "/v1/sessions/" + ref(h.ref) + "/attach"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	c, err := h.s.dial(h.ctx, path)
	if err != nil {
		return nil, err
	}
	size := 0
	for {
		b, err := readMessage(h.ctx, c, &size)
		if err != nil {
			_ = c.CloseNow()
			return nil, connectionLost(err)
		}
		m, err := decodeServer(b)
		if err != nil {
			_ = c.CloseNow()
			return nil, err
		}
		switch m.Type {
		case "attached":
			if n := m.Limits["maxMessageBytes"]; n > 0 {
				h.mu.Lock()
				h.maxMsg = n
				h.mu.Unlock()
			}
			h.mu.Lock()
			h.conn = c
			h.mu.Unlock()
			return m, nil
		case "error":
			_ = c.CloseNow()
			return nil, newAPIError(m.Code, 0, m.Message)
		}
	}
}

// errExit marks the end of a connection by the exit message.
var errExit = errors.New("exit")

func (h *SessionAttachHandle) run() {
	defer close(h.done)
	defer h.cancel()
	for {
		err := h.pump()
		if err == errExit {
			return
		}
		h.mu.Lock()
		detached := h.detached
		h.mu.Unlock()
		var gap *GapError
		switch {
		case detached:
			h.err = ErrDetached
			return
		case h.ctx.Err() != nil:
			h.err = connectionLost(context.Cause(h.ctx))
			return
		case errors.As(err, &gap) || h.o.NoResume:
			h.err = err
			if gap == nil {
				h.err = connectionLost(err)
			}
			return
		}
		if err = h.reconnect(err); err != nil {
			h.err = err
			return
		}
	}
}

// reconnect tries again with bounded backoff from the next offset needed.
func (h *SessionAttachHandle) reconnect(cause error) error {
	delay := 50 * time.Millisecond
	for attempt := 1; attempt <= h.s.cfg.MaxReconnects; attempt++ {
		select {
		case <-h.ctx.Done():
			return connectionLost(context.Cause(h.ctx))
		case <-time.After(delay):
		}
		if delay *= 2; delay > 2*time.Second {
			delay = 2 * time.Second
		}
		since := h.next.Load()
		m, err := h.connect(since, false)
		if err != nil {
			var api *APIError
			if errors.As(err, &api) && api.Code != "unavailable" {
				return err // the session is gone, or we may not attach
			}
			cause = err
			continue
		}
		n := h.reconnects.Add(1)
		if m.ReplayFrom > since {
			if err := h.gap(since, m.ReplayFrom); err != nil {
				return err
			}
		}
		if h.o.OnReconnect != nil {
			h.o.OnReconnect(int(n), since)
		}
		return nil
	}
	return connectionLost(cause)
}

// pump reads one connection until exit (errExit) or failure.
func (h *SessionAttachHandle) pump() error {
	h.mu.Lock()
	c := h.conn
	h.mu.Unlock()
	defer c.CloseNow()
	size := 0
	for {
		b, err := readMessage(h.ctx, c, &size)
		if err != nil {
			return err
		}
		m, err := decodeServer(b)
		if err != nil {
			return err
		}
		switch m.Type {
		case "stdout", "stderr":
			if err := h.deliver(m); err != nil {
				return err
			}
		case "gap":
			if err := h.gap(m.From, m.To); err != nil {
				return err
			}
		case "live":
			select {
			case <-h.live:
			default:
				close(h.live)
				if h.o.OnLive != nil {
					h.o.OnLive(h.replayTo)
				}
			}
		case "error":
			if h.o.OnError != nil {
				h.o.OnError(newAPIError(m.Code, 0, m.Message))
			}
		case "exit":
			h.exit = exitInfo(m)
			if h.o.OnExit != nil {
				h.o.OnExit(h.exit)
			}
			go c.Close(websocket.StatusNormalClosure, "")
			return errExit
		}
	}
}

func (h *SessionAttachHandle) gap(from, to int64) error {
	next := h.next.Load()
	if to <= next {
		return nil
	}
	if from < next {
		from = next
	}
	if h.o.StrictGaps {
		return &GapError{From: from, To: to}
	}
	h.next.Store(to)
	if h.o.OnGap != nil {
		h.o.OnGap(from, to)
	}
	return nil
}

// deliver hands on the part of a chunk not yet delivered, exactly once.
func (h *SessionAttachHandle) deliver(m *serverMsg) error {
	off, data := m.Offset, m.Data
	next := h.next.Load()
	end := off + int64(len(data))
	if end <= next && len(data) > 0 {
		return nil
	}
	if off < next {
		data = data[next-off:]
		off = next
	}
	if off > next {
		if err := h.gap(next, off); err != nil {
			return err
		}
	}
	h.next.Store(end)
	if m.Type == "stdout" && h.o.OnStdout != nil {
		h.o.OnStdout(data)
	}
	if m.Type == "stderr" && h.o.OnStderr != nil {
		h.o.OnStderr(data)
	}
	if h.o.OnChunk != nil {
		h.o.OnChunk(Chunk{Stream: m.Type, Offset: off, Data: data})
	}
	return nil
}

func (h *SessionAttachHandle) current() (*websocket.Conn, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.conn, h.maxMsg
}

// Write sends bytes to the session's stdin, split into messages the
// daemon accepts. A write that fails is not retried (it may have been
// partly delivered): it returns the error.
func (h *SessionAttachHandle) Write(data []byte) error {
	c, max := h.current()
	if err := writeSplit(h.ctx, c, data, max); err != nil {
		return connectionLost(err)
	}
	return nil
}

// WriteString sends text to the session's stdin.
func (h *SessionAttachHandle) WriteString(s string) error { return h.Write([]byte(s)) }

// CloseStdin closes the process's stdin (eof; pipe sessions).
func (h *SessionAttachHandle) CloseStdin() error { return h.send(encodeType("eof")) }

// Resize sets the PTY's size.
func (h *SessionAttachHandle) Resize(cols, rows int) error {
	return h.send(encodeResize(cols, rows))
}

// Signal sends a signal by name or number.
func (h *SessionAttachHandle) Signal(name string) error { return h.send(signalMessage(name)) }

func (h *SessionAttachHandle) send(b []byte) error {
	c, _ := h.current()
	if err := c.Write(h.ctx, websocket.MessageBinary, b); err != nil {
		return connectionLost(err)
	}
	return nil
}

// Session is the session object the daemon sent on attach.
func (h *SessionAttachHandle) Session() *Session { return h.session }

// ReplayEnd is the offset where the first replay ends (replayTo); Live is
// closed when it has been delivered.
func (h *SessionAttachHandle) ReplayEnd() int64 { return h.replayTo }

// Live is closed once the replay has been delivered.
func (h *SessionAttachHandle) Live() <-chan struct{} { return h.live }

// Offset is the offset of the next byte the handle will deliver.
func (h *SessionAttachHandle) Offset() int64 { return h.next.Load() }

// Reconnects counts the automatic reconnects so far.
func (h *SessionAttachHandle) Reconnects() int { return int(h.reconnects.Load()) }

// Detach closes the connection; the process runs on. Wait then returns
// ErrDetached.
func (h *SessionAttachHandle) Detach() error {
	h.mu.Lock()
	h.detached = true
	c := h.conn
	h.mu.Unlock()
	_ = c.Close(websocket.StatusNormalClosure, "")
	h.cancel()
	<-h.done
	return nil
}

// Done is closed when the attach has ended.
func (h *SessionAttachHandle) Done() <-chan struct{} { return h.done }

// Wait waits for the process's exit: its code (-1 when a signal killed
// it) and the signal's name. After Detach it is ErrDetached; when the
// attach could not go on, ErrConnectionLost (or *GapError in strict
// mode, or the daemon's error on reconnect).
func (h *SessionAttachHandle) Wait() (int, string, error) {
	<-h.done
	if h.err != nil {
		return 0, "", h.err
	}
	return h.exit.Code, h.exit.Signal, nil
}
