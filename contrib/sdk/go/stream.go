package lodge

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// ExecStreamOptions is the start of an exec stream (GET /v1/exec/stream).
type ExecStreamOptions struct {
	Command        string
	Args           []string
	Workdir        string // sent as workDir
	Env            map[string]string
	User           string
	TimeoutSeconds float64 // server-side limit on the process; 0: none
	TTY            bool
	Cols, Rows     int // default 80x24

	// Output callbacks get the bytes as they come, one call at a time, in
	// order; Wait returns only after the last one returned. Use Text for
	// UTF-8 text.
	OnStdout func(chunk []byte)
	OnStderr func(chunk []byte)
	// OnChunk gets every output chunk with its stream and offset (one
	// counter over both streams, from 0), after OnStdout/OnStderr.
	OnChunk func(c Chunk)
	// OnError gets the errors the daemon reports without ending the
	// stream (a bad signal name: *BadRequestError, input after eof:
	// *ConflictError).
	OnError func(err error)
}

// ExitInfo is how a process ended. Code is -1 when a signal killed it
// (Signal then names it).
type ExitInfo struct {
	Code     int
	Signal   string
	TimedOut bool
}

// ExecStreamHandle is a running exec stream. Its methods are safe for
// concurrent use. The process is killed by the daemon when the connection
// drops, so the stream cannot resume.
type ExecStreamHandle struct {
	conn    *websocket.Conn
	ctx     context.Context
	cancel  context.CancelFunc
	o       ExecStreamOptions
	maxMsg  int
	pid     int
	done    chan struct{}
	exit    ExitInfo
	err     error
	closeMu sync.Mutex
	closed  bool
	rsize   int // the last message's size, read's hint
}

// ExecStream starts a command and streams its output. It returns once the
// daemon reports the process started; a process that cannot start is
// *SpawnFailedError. Cancelling ctx ends the stream at once: the
// connection closes, the daemon kills the process, Wait fails.
func (s *Sandbox) ExecStream(ctx context.Context, o ExecStreamOptions) (*ExecStreamHandle, error) {
	c, err := s.dial(ctx, "/v1/exec/stream")
	if err != nil {
		return nil, err
	}
	f := startFields{Command: o.Command, Args: o.Args, WorkDir: o.Workdir,
		User: o.User, TimeoutSeconds: o.TimeoutSeconds, Cols: o.Cols, Rows: o.Rows}
	if o.Env != nil {
		f.Env = sortedEnv(o.Env)
	}
	if o.TTY {
		t := true
		f.TTY = &t
	}
	hctx, cancel := context.WithCancel(ctx)
	h := &ExecStreamHandle{conn: c, ctx: hctx, cancel: cancel, o: o,
		maxMsg: s.maxMsg, done: make(chan struct{})}
	if err := c.Write(hctx, websocket.MessageBinary, encodeStart(f)); err != nil {
		h.abort()
		return nil, connectionLost(err)
	}
	for {
		m, err := h.read()
		if err != nil {
			h.abort()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, connectionLost(err)
		}
		switch m.Type {
		case "started":
			h.pid = m.Pid
			if n := m.Limits["maxMessageBytes"]; n > 0 {
				h.maxMsg = n
			}
			go h.run()
			return h, nil
		case "error":
			h.abort()
			return nil, newAPIError(m.Code, 0, m.Message)
		}
	}
}

func (h *ExecStreamHandle) read() (*serverMsg, error) {
	b, err := readMessage(h.ctx, h.conn, &h.rsize)
	if err != nil {
		return nil, err
	}
	return decodeServer(b)
}

func (h *ExecStreamHandle) abort() {
	h.cancel()
	_ = h.conn.CloseNow()
}

// run reads until exit or failure; callbacks run here, in order.
func (h *ExecStreamHandle) run() {
	defer close(h.done)
	defer h.abort()
	for {
		m, err := h.read()
		if err != nil {
			h.closeMu.Lock()
			closed := h.closed
			h.closeMu.Unlock()
			switch {
			case closed:
				h.err = connectionLost(ErrClosed)
			case h.ctx.Err() != nil && !errors.Is(err, ErrConnectionLost):
				h.err = connectionLost(context.Cause(h.ctx))
			default:
				h.err = connectionLost(err)
			}
			return
		}
		switch m.Type {
		case "stdout", "stderr":
			f := h.o.OnStdout
			if m.Type == "stderr" {
				f = h.o.OnStderr
			}
			if f != nil {
				f(m.Data)
			}
			if h.o.OnChunk != nil {
				h.o.OnChunk(Chunk{Stream: m.Type, Offset: m.Offset, Data: m.Data})
			}
		case "error":
			if h.o.OnError != nil {
				h.o.OnError(newAPIError(m.Code, 0, m.Message))
			}
		case "exit":
			h.exit = exitInfo(m)
			h.finish()
			return
		}
	}
}

// finish answers the server's close after exit, without holding Wait
// long if the peer does not close.
func (h *ExecStreamHandle) finish() {
	go func() {
		_ = h.conn.Close(websocket.StatusNormalClosure, "")
	}()
}

func exitInfo(m *serverMsg) ExitInfo {
	e := ExitInfo{Code: -1, TimedOut: m.TimedOut}
	if m.ExitCode != nil {
		e.Code = *m.ExitCode
	}
	if m.Signal != nil {
		e.Signal = *m.Signal
	}
	return e
}

// Pid is the command's process id, as the daemon reported it.
func (h *ExecStreamHandle) Pid() int { return h.pid }

// Write sends bytes to the process's stdin, split into messages the daemon
// accepts; it blocks while the daemon applies backpressure.
func (h *ExecStreamHandle) Write(data []byte) error {
	if err := writeSplit(h.ctx, h.conn, data, h.maxMsg); err != nil {
		return h.writeErr(err)
	}
	return nil
}

// WriteString sends text to the process's stdin.
func (h *ExecStreamHandle) WriteString(s string) error { return h.Write([]byte(s)) }

// CloseStdin closes the process's stdin (the protocol's eof; pipe mode).
func (h *ExecStreamHandle) CloseStdin() error { return h.send(encodeType("eof")) }

// Resize sets the terminal's size (TTY mode).
func (h *ExecStreamHandle) Resize(cols, rows int) error {
	return h.send(encodeResize(cols, rows))
}

// Signal sends a signal by name ("INT", "TERM", "RTMIN+3") or number
// ("9") to the foreground process group (TTY) or the process group.
func (h *ExecStreamHandle) Signal(name string) error { return h.send(signalMessage(name)) }

func signalMessage(name string) []byte {
	if n, err := strconv.Atoi(name); err == nil {
		return encodeSignal("", n, true)
	}
	return encodeSignal(name, 0, false)
}

func (h *ExecStreamHandle) send(b []byte) error {
	if err := h.conn.Write(h.ctx, websocket.MessageBinary, b); err != nil {
		return h.writeErr(err)
	}
	return nil
}

func (h *ExecStreamHandle) writeErr(err error) error {
	select {
	case <-h.done:
		if h.err == nil {
			return fmt.Errorf("lodge: the process has exited: %w", err)
		}
		return h.err
	default:
	}
	return connectionLost(err)
}

// Wait waits for the process's exit. A stream that ended without exit
// (connection lost, ctx cancelled, Close) is ErrConnectionLost, never an
// exit.
func (h *ExecStreamHandle) Wait() (ExitInfo, error) {
	<-h.done
	if h.err != nil {
		return ExitInfo{}, h.err
	}
	return h.exit, nil
}

// Done is closed once the stream has ended (after the last callback).
func (h *ExecStreamHandle) Done() <-chan struct{} { return h.done }

// Close ends the stream now without eof: the daemon kills the process.
// Wait then returns ErrConnectionLost wrapping ErrClosed.
func (h *ExecStreamHandle) Close() error {
	h.closeMu.Lock()
	h.closed = true
	h.closeMu.Unlock()
	h.abort()
	select {
	case <-h.done:
	case <-time.After(5 * time.Second):
	}
	return nil
}
