package lodge

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"unicode/utf8"
)

// CreateSessionOptions is a session request (POST /v1/sessions).
// Without Command or Args the session runs the user's login shell.
type CreateSessionOptions struct {
	Name       string
	Command    string
	Args       []string
	Workdir    string // sent as workDir
	Env        map[string]string
	User       string
	Pty        bool
	Cols, Rows int // default 80x24
	BufferSize int // ring bytes; 0: the daemon's default (1 MiB)
}

// Session is a session object.
type Session struct {
	ID          string   `json:"id"`
	Name        string   `json:"name,omitempty"`
	Command     string   `json:"command,omitempty"`
	Args        []string `json:"args,omitempty"`
	Pid         int      `json:"pid"`
	Pty         bool     `json:"pty"`
	Cols        int      `json:"cols"`
	Rows        int      `json:"rows"`
	WorkDir     string   `json:"workDir,omitempty"`
	User        string   `json:"user,omitempty"`
	CreatedAt   string   `json:"createdAt,omitempty"`
	State       string   `json:"state"` // "running" or "exited"
	ExitCode    *int     `json:"exitCode"`
	Signal      *string  `json:"signal"`
	Clients     int      `json:"clients"`
	BufferSize  int      `json:"bufferSize"`
	OutputBytes int64    `json:"outputBytes"`
}

type sessionRequest struct {
	Name       string            `json:"name,omitempty"`
	Command    string            `json:"command,omitempty"`
	Args       []string          `json:"args,omitempty"`
	WorkDir    string            `json:"workDir,omitempty"`
	Env        map[string]string `json:"env,omitempty"`
	User       string            `json:"user,omitempty"`
	Pty        bool              `json:"pty,omitempty"`
	Cols       int               `json:"cols,omitempty"`
	Rows       int               `json:"rows,omitempty"`
	BufferSize int               `json:"bufferSize,omitempty"`
}

// CreateSession starts a session; it returns once the process started.
func (s *Sandbox) CreateSession(ctx context.Context, o CreateSessionOptions) (*Session, error) {
	req := sessionRequest{o.Name, o.Command, o.Args, o.Workdir, o.Env, o.User,
		o.Pty, o.Cols, o.Rows, o.BufferSize}
	var out Session
	if err := s.call(ctx, "POST", "/v1/sessions", req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListSessions lists every session, running and exited.
func (s *Sandbox) ListSessions(ctx context.Context) ([]Session, error) {
	var out struct {
		Sessions []Session `json:"sessions"`
	}
	if err := s.call(ctx, "GET", "/v1/sessions", nil, &out); err != nil {
		return nil, err
	}
	return out.Sessions, nil
}

// GetSession gets a session by id or name.
func (s *Sandbox) GetSession(ctx context.Context, idOrName string) (*Session, error) {
	var out Session
	if err := s.call(ctx, "GET", "/v1/sessions/"+ref(idOrName), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteSession ends a session's process group (SIGHUP, SIGTERM, then
// SIGKILL) and forgets the session.
func (s *Sandbox) DeleteSession(ctx context.Context, idOrName string) error {
	return s.call(ctx, "DELETE", "/v1/sessions/"+ref(idOrName), nil, nil)
}

// SignalSession sends a signal ("INT", "TERM", "RTMIN+3", ...) without
// attaching.
func (s *Sandbox) SignalSession(ctx context.Context, idOrName, signal string) error {
	body := map[string]any{"signal": signal}
	if n, err := strconv.Atoi(signal); err == nil {
		body["signal"] = n
	}
	return s.call(ctx, "POST", "/v1/sessions/"+ref(idOrName)+"/signal", body, nil)
}

// SendInput writes to a session's stdin without attaching (text as data,
// other bytes as dataBase64).
func (s *Sandbox) SendInput(ctx context.Context, idOrName string, data []byte) error {
	body := map[string]string{"data": string(data)}
	if !utf8.Valid(data) || containsNUL(data) {
		body = map[string]string{"dataBase64": base64.StdEncoding.EncodeToString(data)}
	}
	return s.call(ctx, "POST", "/v1/sessions/"+ref(idOrName)+"/input", body, nil)
}

func containsNUL(b []byte) bool {
	for _, c := range b {
		if c == 0 {
			return true
		}
	}
	return false
}

// ResizeSession sets a PTY session's size without attaching.
func (s *Sandbox) ResizeSession(ctx context.Context, idOrName string, cols, rows int) error {
	body := map[string]int{"cols": cols, "rows": rows}
	return s.call(ctx, "POST", "/v1/sessions/"+ref(idOrName)+"/resize", body, nil)
}

// SessionLog returns the bytes the session's ring holds now.
func (s *Sandbox) SessionLog(ctx context.Context, idOrName string) ([]byte, error) {
	l, err := s.SessionLogSince(ctx, idOrName, -1)
	if err != nil {
		return nil, err
	}
	return l.Data, nil
}

// Log is a piece of a session's output: Data runs from offset Start to End.
type Log struct {
	Data       []byte
	Start, End int64
}

// SessionLogSince returns the ring's bytes from offset since (a negative
// since: from the oldest byte held).
func (s *Sandbox) SessionLogSince(ctx context.Context, idOrName string, since int64) (*Log, error) {
	path := "/v1/sessions/" + ref(idOrName) + "/log"
	if since >= 0 {
		path += "?since=" + strconv.FormatInt(since, 10)
	}
	l := &Log{}
	_, err := s.raw(ctx, "GET", path, nil, func(resp *http.Response) error {
		var err error
		if l.Data, err = io.ReadAll(resp.Body); err != nil {
			return err
		}
		l.Start, _ = strconv.ParseInt(resp.Header.Get("Lodge-Log-Start"), 10, 64)
		l.End, _ = strconv.ParseInt(resp.Header.Get("Lodge-Log-End"), 10, 64)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return l, nil
}

// WaitSession waits for a session's process to exit and returns how: at
// once for an exited session. It long-polls GET /v1/sessions/{ref}/wait,
// asking again until the state is exited; ctx bounds the whole wait.
func (s *Sandbox) WaitSession(ctx context.Context, idOrName string) (ExitInfo, error) {
	poll := 30.0
	if rt := s.cfg.RequestTimeout.Seconds(); rt > 0 && rt < 2*poll {
		poll = rt / 2
	}
	path := fmt.Sprintf("/v1/sessions/%s/wait?timeout=%g", ref(idOrName), poll)
	for {
		var se Session
		err := s.call(ctx, "GET", path, nil, &se)
		if errors.Is(err, ErrNotFound) {
			// a daemon without /wait: the session may still be there
			if _, gerr := s.GetSession(ctx, idOrName); gerr == nil {
				return s.waitByAttach(ctx, idOrName)
			}
		}
		if err != nil {
			return ExitInfo{}, err
		}
		if se.State == "exited" {
			return sessionExit(&se), nil
		}
	}
}

// waitByAttach waits on a read-only attach from the end of the output.
func (s *Sandbox) waitByAttach(ctx context.Context, idOrName string) (ExitInfo, error) {
	se, err := s.GetSession(ctx, idOrName)
	if err != nil {
		return ExitInfo{}, err
	}
	if se.State == "exited" {
		return sessionExit(se), nil
	}
	h, err := s.AttachSession(ctx, se.ID, SessionAttachOptions{
		ReadOnly: true, Since: Offset(se.OutputBytes)})
	if err != nil {
		return ExitInfo{}, err
	}
	code, sig, err := h.Wait()
	if err != nil {
		return ExitInfo{}, fmt.Errorf("lodge: waiting for %s: %w", idOrName, err)
	}
	return ExitInfo{Code: code, Signal: sig}, nil
}

func sessionExit(se *Session) ExitInfo {
	e := ExitInfo{Code: -1}
	if se.ExitCode != nil {
		e.Code = *se.ExitCode
	}
	if se.Signal != nil {
		e.Signal = *se.Signal
	}
	return e
}
