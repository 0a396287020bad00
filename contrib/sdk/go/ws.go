package lodge

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/coder/websocket"
)

// serverReadLimit bounds one server message: lodged sends at most 256 KiB
// of output and a small header, and an attached message holds a session
// object. coder/websocket's default of 32 KiB would refuse them.
const serverReadLimit = 1 << 20

// dial opens a WebSocket to path; a refused upgrade is the daemon's typed
// error, with its status.
func (s *Sandbox) dial(ctx context.Context, path string) (*websocket.Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, s.cfg.ConnectTimeout)
	defer cancel()
	h := http.Header{}
	if s.token != "" {
		h.Set("Authorization", "Bearer "+s.token)
	}
	c, resp, err := websocket.Dial(dctx, s.base+path, &websocket.DialOptions{
		HTTPClient:      s.http,
		HTTPHeader:      h,
		CompressionMode: websocket.CompressionDisabled,
	})
	if err != nil {
		if resp != nil && resp.StatusCode != http.StatusSwitchingProtocols && resp.StatusCode != 0 {
			var body []byte
			if resp.Body != nil {
				body, _ = io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			}
			return nil, errorFromReply(resp.StatusCode, body)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	c.SetReadLimit(serverReadLimit)
	return c, nil
}

// readMessage reads one message into a new buffer the size of the last
// (*size): io.ReadAll, behind Conn.Read, grows a buffer from 512 bytes for
// every message, and at 256 KiB of output each those allocations and
// copies were a third of an exec stream's CPU. decodeServer keeps slices
// of the buffer (output data is not copied again), so it is never reused.
func readMessage(ctx context.Context, c *websocket.Conn, size *int) ([]byte, error) {
	_, r, err := c.Reader(ctx)
	if err != nil {
		return nil, err
	}
	// room past the last size, so a message as large ends in a read
	// that finds EOF, not in a growth
	b := make([]byte, 0, *size+512)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			*size = len(b)
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// writeSplit sends data as stdin messages no larger than max bytes each.
func writeSplit(ctx context.Context, c *websocket.Conn, data []byte, max int) error {
	chunk := max - stdinOverhead
	if chunk < 1 {
		chunk = 1
	}
	for first := true; first || len(data) > 0; first = false {
		n := len(data)
		if n > chunk {
			n = chunk
		}
		if err := c.Write(ctx, websocket.MessageBinary, encodeStdin(data[:n])); err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

// closedNormally tells a close after the server's exit from a failure.
func closedNormally(err error) bool {
	return websocket.CloseStatus(err) == websocket.StatusNormalClosure || errors.Is(err, io.EOF)
}
