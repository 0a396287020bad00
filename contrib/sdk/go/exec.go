package lodge

import (
	"context"
	"encoding/base64"
)

// ExecOptions is a run request for Exec (POST /v1/exec). Give Command (run
// by the user's shell) or Args (run directly), not both.
type ExecOptions struct {
	Command string
	Args    []string
	Workdir string            // sent as workDir
	Env     map[string]string // added to the user's default environment
	User    string
	// TimeoutSeconds is the server-side limit on the process (fractions
	// allowed; 0: none), not a client timeout: use ctx for that.
	TimeoutSeconds float64
	Stdin          string // fed to the process, then closed; empty: /dev/null
	// Encoding "base64" asks for the output as raw bytes (decoded here, so
	// Stdout and Stderr hold the exact bytes); the default "utf8" replaces
	// invalid bytes with U+FFFD.
	Encoding       string
	MaxOutputBytes int // per stream; 0: the daemon's default
}

// ExecResult is the result of Exec. ExitCode is -1 when the process was
// killed by a signal (Signal then names it, e.g. "TERM").
type ExecResult struct {
	Stdout     string
	Stderr     string
	ExitCode   int
	Signal     string
	TimedOut   bool
	Truncated  bool
	DurationMs int64
}

type execRequest struct {
	Command        string            `json:"command,omitempty"`
	Args           []string          `json:"args,omitempty"`
	WorkDir        string            `json:"workDir,omitempty"`
	Env            map[string]string `json:"env,omitempty"`
	User           string            `json:"user,omitempty"`
	TimeoutSeconds float64           `json:"timeoutSeconds,omitempty"`
	Stdin          string            `json:"stdin,omitempty"`
	Encoding       string            `json:"encoding,omitempty"`
	MaxOutputBytes int               `json:"maxOutputBytes,omitempty"`
}

type execReply struct {
	Stdout     string  `json:"stdout"`
	Stderr     string  `json:"stderr"`
	ExitCode   *int    `json:"exitCode"`
	Signal     *string `json:"signal"`
	TimedOut   bool    `json:"timedOut"`
	Truncated  bool    `json:"truncated"`
	DurationMs int64   `json:"durationMs"`
}

// ExecCommand runs command with the user's shell and waits for it.
func (s *Sandbox) ExecCommand(ctx context.Context, command string) (*ExecResult, error) {
	return s.Exec(ctx, ExecOptions{Command: command})
}

// Exec runs a command to completion and returns its buffered output. A
// process that cannot start is *SpawnFailedError, not an exit code.
func (s *Sandbox) Exec(ctx context.Context, o ExecOptions) (*ExecResult, error) {
	req := execRequest{Command: o.Command, Args: o.Args, WorkDir: o.Workdir,
		Env: o.Env, User: o.User, TimeoutSeconds: o.TimeoutSeconds,
		Stdin: o.Stdin, Encoding: o.Encoding, MaxOutputBytes: o.MaxOutputBytes}
	var r execReply
	if err := s.call(ctx, "POST", "/v1/exec", req, &r); err != nil {
		return nil, err
	}
	res := &ExecResult{Stdout: r.Stdout, Stderr: r.Stderr, ExitCode: -1,
		TimedOut: r.TimedOut, Truncated: r.Truncated, DurationMs: r.DurationMs}
	if r.ExitCode != nil {
		res.ExitCode = *r.ExitCode
	}
	if r.Signal != nil {
		res.Signal = *r.Signal
	}
	if o.Encoding == "base64" {
		for _, p := range []*string{&res.Stdout, &res.Stderr} {
			b, err := base64.StdEncoding.DecodeString(*p)
			if err != nil {
				return nil, err
			}
			*p = string(b)
		}
	}
	return res, nil
}
