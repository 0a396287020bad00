package lodge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"
)

// Config says how to reach lodged. The zero Config reads LODGE_URL and
// LODGE_TOKEN, and without LODGE_URL uses the local Unix socket
// ($LODGE_RUNDIR or /run/lodge, then lodged.sock), which needs no token.
type Config struct {
	URL        string // http://host:port; empty: $LODGE_URL, else the Unix socket
	Token      string // empty: $LODGE_TOKEN
	RuntimeDir string // for the Unix socket; empty: $LODGE_RUNDIR or /run/lodge

	// ConnectTimeout bounds dialing and the WebSocket handshake (default
	// 10 s). RequestTimeout, when set, bounds each REST call as a whole;
	// neither is the server-side TimeoutSeconds of a run request.
	ConnectTimeout time.Duration
	RequestTimeout time.Duration

	// MaxReconnects is how many reconnects in a row an attach tries before
	// it gives up with ErrConnectionLost (default 8).
	MaxReconnects int
}

// Sandbox is a client of one lodged. It is safe for concurrent use.
type Sandbox struct {
	base   string // scheme://host, no trailing slash
	token  string
	http   *http.Client
	cfg    Config
	maxMsg int
}

// defaultMaxMessageBytes is lodged's default --max-message-size, used
// until the daemon tells its own in attached/started limits.
const defaultMaxMessageBytes = 1 << 20

// Connect makes a client. It does not call the daemon: a wrong token
// fails the first call with *UnauthorizedError (use Health to check).
func Connect(ctx context.Context, cfg Config) (*Sandbox, error) {
	if cfg.URL == "" {
		cfg.URL = os.Getenv("LODGE_URL")
	}
	if cfg.Token == "" {
		cfg.Token = os.Getenv("LODGE_TOKEN")
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	if cfg.MaxReconnects == 0 {
		cfg.MaxReconnects = 8
	}
	dialer := &net.Dialer{Timeout: cfg.ConnectTimeout, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		DialContext:         dialer.DialContext,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	s := &Sandbox{cfg: cfg, token: cfg.Token, maxMsg: defaultMaxMessageBytes}
	if cfg.URL == "" {
		dir := cfg.RuntimeDir
		if dir == "" {
			dir = os.Getenv("LODGE_RUNDIR")
		}
		if dir == "" {
			dir = "/run/lodge"
		}
		sock := filepath.Join(dir, "lodged.sock")
		tr.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, "unix", sock)
		}
		s.base = "http://lodged"
		s.token = ""
	} else {
		u, err := url.Parse(cfg.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("lodge: bad URL %q: want http://host:port", cfg.URL)
		}
		s.base = u.Scheme + "://" + u.Host
	}
	s.http = &http.Client{Transport: tr}
	return s, nil
}

// Close releases idle connections. Open handles are not affected.
func (s *Sandbox) Close() error {
	s.http.CloseIdleConnections()
	return nil
}

// Health is GET /v1/health.
type Health struct {
	Status   string         `json:"status"`
	Version  string         `json:"version"`
	Protocol int            `json:"protocol"`
	Sessions int            `json:"sessions"`
	Limits   map[string]int `json:"limits,omitempty"`
}

// Health asks the daemon how it is.
func (s *Sandbox) Health(ctx context.Context) (*Health, error) {
	var h Health
	if err := s.call(ctx, "GET", "/v1/health", nil, &h); err != nil {
		return nil, err
	}
	if n := h.Limits["maxMessageBytes"]; n > 0 {
		s.maxMsg = n
	}
	return &h, nil
}

// call does one REST call: body (if not nil) is sent as JSON, a 2xx reply
// is decoded into out (if not nil), anything else is the typed error.
func (s *Sandbox) call(ctx context.Context, method, path string, body, out any) error {
	_, err := s.raw(ctx, method, path, body, func(resp *http.Response) error {
		if out == nil {
			_, err := io.Copy(io.Discard, resp.Body)
			return err
		}
		return json.NewDecoder(resp.Body).Decode(out)
	})
	return err
}

func (s *Sandbox) raw(ctx context.Context, method, path string, body any,
	read func(*http.Response) error) (*http.Response, error) {
	if s.cfg.RequestTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.RequestTimeout)
		defer cancel()
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	resp, err := s.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("lodge: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return resp, errorFromReply(resp.StatusCode, b)
	}
	if err := read(resp); err != nil {
		return resp, fmt.Errorf("lodge: %s %s: reading the reply: %w", method, path, err)
	}
	return resp, nil
}

// ref escapes a session id or name for a path.
func ref(r string) string { return url.PathEscape(r) }
