package lodge_test

// The scenarios of tests/sdk/SCENARIOS.md; each test names its id.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	lodge "lodge.dev/sdk/go"
)

func health(t *testing.T, s *lodge.Sandbox) {
	t.Helper()
	h, err := s.Health(tctx(t))
	if err != nil || h.Status != "ok" || h.Version == "" || h.Sessions < 0 {
		t.Fatalf("%+v %v", h, err)
	}
}

func TestConnect(t *testing.T) {
	t.Run("connect.env", func(t *testing.T) { health(t, connect(t)) })
	t.Run("connect.explicit", func(t *testing.T) {
		needDaemon(t)
		url, tok := os.Getenv("LODGE_URL"), os.Getenv("LODGE_TOKEN")
		t.Setenv("LODGE_URL", "")
		t.Setenv("LODGE_TOKEN", "")
		s, err := lodge.Connect(tctx(t), lodge.Config{URL: url, Token: tok})
		if err != nil {
			t.Fatal(err)
		}
		health(t, s)
	})
	t.Run("connect.unix", func(t *testing.T) {
		needDaemon(t)
		t.Setenv("LODGE_URL", "")
		t.Setenv("LODGE_TOKEN", "")
		s, err := lodge.Connect(tctx(t), lodge.Config{})
		if err != nil {
			t.Fatal(err)
		}
		health(t, s)
		r, err := s.ExecCommand(tctx(t), "echo unix")
		if err != nil || r.Stdout != "unix\n" || r.ExitCode != 0 {
			t.Fatalf("%+v %v", r, err)
		}
		var out buf
		h, err := s.ExecStream(tctx(t), lodge.ExecStreamOptions{Command: "echo unix", OnStdout: out.add})
		if err != nil {
			t.Fatal(err)
		}
		if e, err := h.Wait(); err != nil || e.Code != 0 || out.String() != "unix\n" {
			t.Fatalf("%+v %v %q", e, err, out.String())
		}
	})
}

func TestExec(t *testing.T) {
	s := connect(t)
	run := func(t *testing.T, o lodge.ExecOptions) *lodge.ExecResult {
		t.Helper()
		r, err := s.Exec(tctx(t), o)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	t.Run("exec.basic", func(t *testing.T) {
		r := run(t, lodge.ExecOptions{Command: "echo hello"})
		if r.Stdout != "hello\n" || r.Stderr != "" || r.ExitCode != 0 || r.Signal != "" ||
			r.TimedOut || r.Truncated || r.DurationMs < 0 {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("exec.exit_code", func(t *testing.T) {
		r := run(t, lodge.ExecOptions{Command: "echo out; echo err >&2; exit 3"})
		if r.Stdout != "out\n" || r.Stderr != "err\n" || r.ExitCode != 3 || r.Signal != "" {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("exec.signal", func(t *testing.T) {
		for _, sig := range []string{"TERM", "KILL"} {
			r := run(t, lodge.ExecOptions{Command: "kill -" + sig + " $$"})
			if r.ExitCode != -1 || r.Signal != sig {
				t.Fatalf("%+v", r)
			}
		}
	})
	t.Run("exec.timeout", func(t *testing.T) {
		r := run(t, lodge.ExecOptions{Command: "sleep 30", TimeoutSeconds: 1})
		if !r.TimedOut || r.ExitCode != -1 || r.Signal != "TERM" {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("exec.timeout.fraction", func(t *testing.T) {
		r := run(t, lodge.ExecOptions{Args: []string{"sleep", "30"}, TimeoutSeconds: 0.5})
		if !r.TimedOut || r.Signal != "TERM" {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("exec.spawn_failed", func(t *testing.T) {
		for _, o := range []lodge.ExecOptions{{Command: "true", Workdir: "/nonexistent"},
			{Args: []string{"/nonexistent/program"}}} {
			_, err := s.Exec(tctx(t), o)
			var sf *lodge.SpawnFailedError
			if !errors.As(err, &sf) || sf.Status != 422 || sf.Message == "" {
				t.Fatalf("%v", err)
			}
		}
	})
	t.Run("exec.base64", func(t *testing.T) {
		r := run(t, lodge.ExecOptions{Command: `printf '\377\000A\n'`, Encoding: "base64"})
		if r.Stdout != "\xff\x00A\n" {
			t.Fatalf("%q", r.Stdout)
		}
		r = run(t, lodge.ExecOptions{Command: `printf '\377\000A\n'`})
		if r.Stdout != "\ufffd\u0000A\n" {
			t.Fatalf("%q", r.Stdout)
		}
	})
	t.Run("exec.workdir_env_user", func(t *testing.T) {
		u, _ := user.Current()
		r := run(t, lodge.ExecOptions{Command: `pwd; echo "$FOO"; id -un`, Workdir: "/tmp",
			Env: map[string]string{"FOO": "bar"}, User: u.Username})
		if r.Stdout != "/tmp\nbar\n"+u.Username+"\n" || r.ExitCode != 0 {
			t.Fatalf("%+v", r)
		}
		_, err := s.Exec(tctx(t), lodge.ExecOptions{Command: "true", User: "no-such-user-xyz"})
		if !errors.Is(err, lodge.ErrSpawnFailed) {
			t.Fatal(err)
		}
	})
	t.Run("exec.stdin", func(t *testing.T) {
		if r := run(t, lodge.ExecOptions{Args: []string{"cat"}, Stdin: "abc"}); r.Stdout != "abc" {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("exec.truncated", func(t *testing.T) {
		r := run(t, lodge.ExecOptions{Command: "head -c 100000 /dev/zero", MaxOutputBytes: 10})
		if !r.Truncated || r.Stdout != strings.Repeat("\x00", 10) || r.ExitCode != 0 {
			t.Fatalf("%+v", r)
		}
	})
}

// stream starts an exec stream collecting its output.
type streamed struct {
	h        *lodge.ExecStreamHandle
	out, err buf
	errs     chan error
}

func stream(t *testing.T, s *lodge.Sandbox, o lodge.ExecStreamOptions) *streamed {
	t.Helper()
	st := &streamed{errs: make(chan error, 16)}
	if o.OnStdout == nil {
		o.OnStdout = st.out.add
	}
	if o.OnStderr == nil {
		o.OnStderr = st.err.add
	}
	o.OnError = func(err error) { st.errs <- err }
	h, err := s.ExecStream(longCtx(t), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	st.h = h
	return st
}

func (st *streamed) wait(t *testing.T) lodge.ExitInfo {
	t.Helper()
	e, err := st.h.Wait()
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestStream(t *testing.T) {
	s := connect(t)
	t.Run("stream.basic", func(t *testing.T) {
		var out, errb buf
		var next int64
		contiguous := true
		var last atomic.Bool
		h, err := s.ExecStream(tctx(t), lodge.ExecStreamOptions{Command: "printf out; printf err >&2",
			OnStdout: func(b []byte) { time.Sleep(100 * time.Millisecond); out.add(b); last.Store(true) },
			OnStderr: func(b []byte) { errb.add(b) },
			OnChunk: func(c lodge.Chunk) {
				contiguous = contiguous && c.Offset == next
				next = c.Offset + int64(len(c.Data))
			}})
		if err != nil {
			t.Fatal(err)
		}
		e, err := h.Wait()
		if err != nil || e.Code != 0 || e.Signal != "" || out.String() != "out" || errb.String() != "err" ||
			!last.Load() || !contiguous || next != 6 {
			t.Fatalf("%+v %v %q %q contiguous %v next %d", e, err, out.String(), errb.String(), contiguous, next)
		}
	})
	t.Run("stream.exit_code", func(t *testing.T) {
		if e := stream(t, s, lodge.ExecStreamOptions{Command: "exit 5"}).wait(t); e.Code != 5 || e.Signal != "" {
			t.Fatalf("%+v", e)
		}
	})
	t.Run("stream.stdin_eof", func(t *testing.T) {
		st := stream(t, s, lodge.ExecStreamOptions{Args: []string{"cat"}})
		if err := st.h.WriteString("hello\n"); err != nil {
			t.Fatal(err)
		}
		_ = st.h.Write([]byte{0, 0xff})
		_ = st.h.CloseStdin()
		if e := st.wait(t); e.Code != 0 || st.out.String() != "hello\n\x00\xff" {
			t.Fatalf("%+v %q", e, st.out.String())
		}
	})
	t.Run("stream.pty", func(t *testing.T) {
		st := stream(t, s, lodge.ExecStreamOptions{Command: `test -t 0 && test -t 1 && echo "tty $TERM"; echo err >&2`,
			TTY: true, Cols: 120, Rows: 40})
		if e := st.wait(t); e.Code != 0 || !st.out.contains("tty xterm-256color") || !st.out.contains("err") || st.err.String() != "" {
			t.Fatalf("%+v %q %q", e, st.out.String(), st.err.String())
		}
	})
	t.Run("stream.resize", func(t *testing.T) {
		st := stream(t, s, lodge.ExecStreamOptions{Command: "stty size; read x; stty size", TTY: true, Cols: 120, Rows: 40})
		eventually(t, "40 120", func() bool { return st.out.contains("40 120") })
		_ = st.h.Resize(100, 30)
		_ = st.h.WriteString("\n")
		if e := st.wait(t); e.Code != 0 || !st.out.contains("30 100") {
			t.Fatalf("%+v %q", e, st.out.String())
		}
	})
	t.Run("stream.signal", func(t *testing.T) {
		st := stream(t, s, lodge.ExecStreamOptions{Command: "echo ready; exec sleep 60"})
		eventually(t, "ready", func() bool { return st.out.contains("ready") })
		_ = st.h.Signal("TERM")
		if e := st.wait(t); e.Code != -1 || e.Signal != "TERM" {
			t.Fatalf("%+v", e)
		}
	})
	t.Run("stream.signal.group", func(t *testing.T) {
		st := stream(t, s, lodge.ExecStreamOptions{Command: "sleep 60 & echo $!; wait"})
		eventually(t, "pid", func() bool { return strings.Contains(st.out.String(), "\n") })
		p := firstInt(st.out.String())
		_ = st.h.Signal("TERM")
		if e := st.wait(t); e.Signal != "TERM" {
			t.Fatalf("%+v", e)
		}
		eventually(t, "background sleep gone", func() bool { return gone(p) })
	})
	t.Run("stream.signal.rtmin", func(t *testing.T) {
		st := stream(t, s, lodge.ExecStreamOptions{Args: []string{"bash", "-c",
			"trap 'echo got; exit 7' RTMIN+3; echo ready; while :; do sleep 0.1; done"}})
		eventually(t, "ready", func() bool { return st.out.contains("ready") })
		_ = st.h.Signal("RTMIN+3")
		if e := st.wait(t); e.Code != 7 || !st.out.contains("got") {
			t.Fatalf("%+v", e)
		}
	})
	t.Run("stream.timeout", func(t *testing.T) {
		if e := stream(t, s, lodge.ExecStreamOptions{Command: "sleep 30", TimeoutSeconds: 1}).wait(t); !e.TimedOut || e.Signal != "TERM" {
			t.Fatalf("%+v", e)
		}
	})
	t.Run("stream.spawn_failed", func(t *testing.T) {
		called := false
		_, err := s.ExecStream(tctx(t), lodge.ExecStreamOptions{Command: "true", Workdir: "/nonexistent",
			OnStdout: func([]byte) { called = true }})
		if !errors.Is(err, lodge.ErrSpawnFailed) || called {
			t.Fatal(err)
		}
	})
	t.Run("stream.kill_on_disconnect", func(t *testing.T) {
		st := stream(t, s, lodge.ExecStreamOptions{Command: "echo $$; exec sleep 600"})
		eventually(t, "pid", func() bool { return st.out.contains("\n") })
		p := firstInt(st.out.String())
		_ = st.h.Close()
		if _, err := st.h.Wait(); !errors.Is(err, lodge.ErrConnectionLost) || !errors.Is(err, lodge.ErrClosed) {
			t.Fatal(err)
		}
		eventually(t, "process gone", func() bool { return gone(p) })
	})
	t.Run("stream.connection_lost", func(t *testing.T) {
		st := stream(t, viaProxy(t), lodge.ExecStreamOptions{Command: "echo $$; exec sleep 600"})
		eventually(t, "pid", func() bool { return st.out.contains("\n") })
		p := firstInt(st.out.String())
		kit(t, "cut")
		e, err := st.h.Wait()
		if !errors.Is(err, lodge.ErrConnectionLost) || e.Code != 0 || e.Signal != "" {
			t.Fatalf("%+v %v", e, err)
		}
		eventually(t, "process gone", func() bool { return gone(p) })
	})
	t.Run("stream.cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		var out buf
		h, err := s.ExecStream(ctx, lodge.ExecStreamOptions{Command: "echo $$; exec sleep 600", OnStdout: out.add})
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, "pid", func() bool { return out.contains("\n") })
		p := firstInt(out.String())
		cancel()
		if _, err := h.Wait(); !errors.Is(err, lodge.ErrConnectionLost) || !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
		eventually(t, "process gone", func() bool { return gone(p) })
	})
	t.Run("stream.big_output", func(t *testing.T) {
		const total = 2 << 30
		var n int64
		var base, peak uint64
		var ms runtime.MemStats
		h, err := s.ExecStream(longCtx(t), lodge.ExecStreamOptions{Command: "head -c 2147483648 /dev/zero",
			OnStdout: func(b []byte) {
				if n == 0 {
					runtime.ReadMemStats(&ms)
					base = ms.HeapInuse
				}
				n += int64(len(b))
				if n%(64<<20) < int64(len(b)) {
					runtime.ReadMemStats(&ms)
					if ms.HeapInuse > peak {
						peak = ms.HeapInuse
					}
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		e, err := h.Wait()
		if err != nil || e.Code != 0 || n != total {
			t.Fatalf("%+v %v %d", e, err, n)
		}
		if peak > base+256<<20 {
			t.Fatalf("heap grew from %d to %d", base, peak)
		}
		t.Logf("heap in use: %d MiB at the first output, %d MiB at most", base>>20, peak>>20)
	})
	t.Run("stream.big_write", func(t *testing.T) {
		data := make([]byte, 64<<20)
		for i := range data {
			data[i] = byte(i % 251)
		}
		st := stream(t, s, lodge.ExecStreamOptions{Args: []string{"sha256sum"}})
		if err := st.h.Write(data); err != nil {
			t.Fatal(err)
		}
		_ = st.h.CloseStdin()
		sum := sha256.Sum256(data)
		if e := st.wait(t); e.Code != 0 || !strings.HasPrefix(st.out.String(), hex.EncodeToString(sum[:])) {
			t.Fatalf("%+v %q", e, st.out.String())
		}
	})
	t.Run("stream.text", func(t *testing.T) {
		var text strings.Builder
		chunks := 0
		h, err := s.ExecStream(tctx(t), lodge.ExecStreamOptions{Command: `printf '\342'; sleep 0.3; printf '\202\254\n'`,
			OnStdout: func() func([]byte) {
				f := lodge.Text(func(s string) { text.WriteString(s) })
				return func(b []byte) { chunks++; f(b) }
			}()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Wait(); err != nil || text.String() != "€\n" || chunks < 2 {
			t.Fatalf("%v %q %d", err, text.String(), chunks)
		}
	})
	t.Run("stream.bad_message", func(t *testing.T) {
		st := stream(t, s, lodge.ExecStreamOptions{Args: []string{"cat"}})
		_ = st.h.Signal("NOSUCHSIG")
		select {
		case err := <-st.errs:
			var br *lodge.BadRequestError
			if !errors.As(err, &br) || br.Message == "" {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no error")
		}
		_ = st.h.WriteString("x")
		_ = st.h.CloseStdin()
		if e := st.wait(t); e.Code != 0 || st.out.String() != "x" {
			t.Fatalf("%+v %q", e, st.out.String())
		}
	})
}

func TestSession(t *testing.T) {
	s := connect(t)
	ctx := longCtx(t)
	t.Run("session.create", func(t *testing.T) {
		name := uniq("go")
		se := newSession(t, s, lodge.CreateSessionOptions{Name: name, Command: "bash --norc", Workdir: "/tmp", Pty: true, Cols: 120, Rows: 40})
		if !idLine.MatchString(se.ID+"\n") || se.Name != name || !se.Pty || se.Cols != 120 || se.Rows != 40 ||
			se.WorkDir != "/tmp" || se.State != "running" || se.Pid <= 0 {
			t.Fatalf("%+v", se)
		}
	})
	t.Run("session.create.args", func(t *testing.T) {
		se := newSession(t, s, lodge.CreateSessionOptions{Args: []string{"cat"}})
		if se.State != "running" || fmt.Sprint(se.Args) != "[cat]" || se.Pty {
			t.Fatalf("%+v", se)
		}
	})
	t.Run("session.list", func(t *testing.T) {
		a := newSession(t, s, lodge.CreateSessionOptions{Args: []string{"cat"}})
		b := newSession(t, s, lodge.CreateSessionOptions{Args: []string{"cat"}})
		l, err := s.ListSessions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		found := 0
		for _, x := range l {
			if (x.ID == a.ID && x.Name == a.Name) || (x.ID == b.ID && x.Name == b.Name) {
				found++
			}
		}
		if found != 2 {
			t.Fatalf("%+v", l)
		}
	})
	t.Run("session.get", func(t *testing.T) {
		a := newSession(t, s, lodge.CreateSessionOptions{Args: []string{"cat"}})
		x, err1 := s.GetSession(ctx, a.ID)
		y, err2 := s.GetSession(ctx, a.Name)
		if err1 != nil || err2 != nil || x.ID != a.ID || y.ID != a.ID || x.State != "running" {
			t.Fatal(err1, err2)
		}
	})
	t.Run("session.log", func(t *testing.T) {
		a := newSession(t, s, lodge.CreateSessionOptions{Command: "printf abcdef"})
		if _, err := s.WaitSession(ctx, a.ID); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			since      int64
			want       string
			start, end int64
		}{{-1, "abcdef", 0, 6}, {2, "cdef", 2, 6}, {100, "", 6, 6}} {
			l, err := s.SessionLogSince(ctx, a.ID, c.since)
			if err != nil || string(l.Data) != c.want || l.Start != c.start || l.End != c.end {
				t.Fatalf("since %d: %+v %v", c.since, l, err)
			}
		}
	})
	t.Run("session.input", func(t *testing.T) {
		a := newSession(t, s, lodge.CreateSessionOptions{Args: []string{"cat"}})
		_ = s.SendInput(ctx, a.ID, []byte("abc\n"))
		_ = s.SendInput(ctx, a.ID, []byte{0, 1})
		eventually(t, "log", func() bool {
			l, _ := s.SessionLog(ctx, a.ID)
			return string(l) == "abc\n\x00\x01"
		})
	})
	t.Run("session.resize", func(t *testing.T) {
		a := newSession(t, s, lodge.CreateSessionOptions{Command: "read x; stty size; read y", Pty: true, Cols: 80, Rows: 24})
		if err := s.ResizeSession(ctx, a.ID, 100, 30); err != nil {
			t.Fatal(err)
		}
		_ = s.SendInput(ctx, a.ID, []byte("\n"))
		eventually(t, "30 100", func() bool { l, _ := s.SessionLog(ctx, a.ID); return bytes.Contains(l, []byte("30 100")) })
		g, _ := s.GetSession(ctx, a.ID)
		if g.Cols != 100 || g.Rows != 30 {
			t.Fatalf("%+v", g)
		}
	})
	t.Run("session.signal", func(t *testing.T) {
		a := newSession(t, s, lodge.CreateSessionOptions{Command: "exec sleep 600"})
		_ = s.SignalSession(ctx, a.ID, "TERM")
		e, err := s.WaitSession(ctx, a.ID)
		g, _ := s.GetSession(ctx, a.ID)
		if err != nil || e.Code != -1 || e.Signal != "TERM" || g.State != "exited" {
			t.Fatalf("%+v %v", e, err)
		}
	})
	t.Run("session.wait", func(t *testing.T) {
		a := newSession(t, s, lodge.CreateSessionOptions{Command: "sleep 1; exit 4"})
		for i := 0; i < 2; i++ {
			if e, err := s.WaitSession(ctx, a.ID); err != nil || e.Code != 4 || e.Signal != "" {
				t.Fatalf("%+v %v", e, err)
			}
		}
	})
	t.Run("session.delete", func(t *testing.T) {
		a := newSession(t, s, lodge.CreateSessionOptions{Command: "echo $$; exec sleep 600"})
		var p int
		eventually(t, "pid", func() bool { l, _ := s.SessionLog(ctx, a.ID); p = firstInt(string(l)); return p > 0 })
		if err := s.DeleteSession(ctx, a.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.GetSession(ctx, a.ID); !errors.Is(err, lodge.ErrNotFound) {
			t.Fatal(err)
		}
		eventually(t, "process gone", func() bool { return gone(p) })
	})
	t.Run("session.delete.exited", func(t *testing.T) {
		a := newSession(t, s, lodge.CreateSessionOptions{Command: "true"})
		if _, err := s.WaitSession(ctx, a.ID); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteSession(ctx, a.ID); err != nil {
			t.Fatal(err)
		}
		var nf *lodge.NotFoundError
		if err := s.DeleteSession(ctx, a.ID); !errors.As(err, &nf) || nf.Status != 404 {
			t.Fatal(err)
		}
	})
}

// attached collects what an attach delivers.
type attached struct {
	h      *lodge.SessionAttachHandle
	mu     sync.Mutex
	out    []byte
	chunks []lodge.Chunk
	gaps   [][2]int64
	live   int64
	errs   chan error
	broken string
	next   int64
	// afterGap: the next chunk may start past next (the ring moved on)
	afterGap bool
}

func attach(t *testing.T, s *lodge.Sandbox, id string, o lodge.SessionAttachOptions) *attached {
	t.Helper()
	a := &attached{errs: make(chan error, 16), live: -1, next: -1}
	o.OnChunk = func(c lodge.Chunk) {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.next >= 0 && c.Offset != a.next && !(a.afterGap && c.Offset >= a.next) {
			a.broken = fmt.Sprintf("chunk at %d after %d, gaps %v", c.Offset, a.next, a.gaps)
		}
		a.afterGap = false
		a.next = c.Offset + int64(len(c.Data))
		a.out = append(a.out, c.Data...)
		a.chunks = append(a.chunks, lodge.Chunk{Stream: c.Stream, Offset: c.Offset, Data: append([]byte(nil), c.Data...)})
	}
	o.OnGap = func(from, to int64) {
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.next >= 0 && from != a.next {
			a.broken = fmt.Sprintf("gap from %d after %d", from, a.next)
		}
		a.gaps = append(a.gaps, [2]int64{from, to})
		a.next, a.afterGap = to, true
	}
	o.OnLive = func(off int64) { a.mu.Lock(); a.live = off; a.mu.Unlock() }
	o.OnError = func(err error) { a.errs <- err }
	h, err := s.AttachSession(longCtx(t), id, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Detach() })
	a.h = h
	return a
}

func (a *attached) text() string { a.mu.Lock(); defer a.mu.Unlock(); return string(a.out) }

func (a *attached) isLive() bool { a.mu.Lock(); defer a.mu.Unlock(); return a.live >= 0 }

func (a *attached) wait(t *testing.T) (int, string) {
	t.Helper()
	code, sig, err := a.h.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if a.broken != "" {
		t.Fatal(a.broken)
	}
	return code, sig
}

func TestAttach(t *testing.T) {
	s := connect(t)
	ctx := longCtx(t)
	t.Run("attach.replay", func(t *testing.T) {
		se := newSession(t, s, lodge.CreateSessionOptions{Command: `echo one; read line; echo "got $line"`})
		eventually(t, "one", func() bool { l, _ := s.SessionLog(ctx, se.ID); return string(l) == "one\n" })
		a := attach(t, s, se.ID, lodge.SessionAttachOptions{})
		eventually(t, "live", a.isLive)
		_ = a.h.WriteString("x\n")
		if code, _ := a.wait(t); code != 0 || a.text() != "one\ngot x\n" || a.live != 4 ||
			a.chunks[0].Offset != 0 || a.chunks[len(a.chunks)-1].Offset != 4 {
			t.Fatalf("%d %q %d %+v", code, a.text(), a.live, a.chunks)
		}
	})
	t.Run("attach.replay.since", func(t *testing.T) {
		se := newSession(t, s, lodge.CreateSessionOptions{Command: "printf abcdef"})
		if _, err := s.WaitSession(ctx, se.ID); err != nil {
			t.Fatal(err)
		}
		a := attach(t, s, se.ID, lodge.SessionAttachOptions{Since: lodge.Offset(2)})
		if code, _ := a.wait(t); code != 0 || a.text() != "cdef" || a.chunks[0].Offset != 2 || a.live != 6 {
			t.Fatalf("%d %q %+v", code, a.text(), a.chunks)
		}
	})
	t.Run("attach.exited", func(t *testing.T) {
		se := newSession(t, s, lodge.CreateSessionOptions{Command: "echo done; exit 2"})
		if _, err := s.WaitSession(ctx, se.ID); err != nil {
			t.Fatal(err)
		}
		a := attach(t, s, se.ID, lodge.SessionAttachOptions{})
		if code, _ := a.wait(t); code != 2 || a.text() != "done\n" || a.live != 5 {
			t.Fatalf("%d %q", code, a.text())
		}
	})
	t.Run("attach.clients", func(t *testing.T) {
		se := newSession(t, s, lodge.CreateSessionOptions{Args: []string{"cat"}})
		a := attach(t, s, se.ID, lodge.SessionAttachOptions{})
		b := attach(t, s, se.ID, lodge.SessionAttachOptions{})
		eventually(t, "live", func() bool { return a.isLive() && b.isLive() })
		_ = a.h.WriteString("hi\n")
		eventually(t, "both", func() bool { return a.text() == "hi\n" && b.text() == "hi\n" })
		if g, _ := s.GetSession(ctx, se.ID); g.Clients != 2 || a.chunks[0].Offset != b.chunks[0].Offset {
			t.Fatalf("%+v", g)
		}
		_ = a.h.Detach()
		eventually(t, "one client", func() bool { g, _ := s.GetSession(ctx, se.ID); return g.Clients == 1 })
		_ = b.h.WriteString("b\n")
		eventually(t, "b", func() bool { return b.text() == "hi\nb\n" })
	})
	t.Run("attach.detach", func(t *testing.T) {
		se := newSession(t, s, lodge.CreateSessionOptions{Args: []string{"cat"}})
		a := attach(t, s, se.ID, lodge.SessionAttachOptions{})
		_ = a.h.Detach()
		if _, _, err := a.h.Wait(); !errors.Is(err, lodge.ErrDetached) {
			t.Fatal(err)
		}
		if g, _ := s.GetSession(ctx, se.ID); g.State != "running" {
			t.Fatalf("%+v", g)
		}
	})
	t.Run("attach.pty", func(t *testing.T) {
		se := newSession(t, s, lodge.CreateSessionOptions{Command: "bash --norc", Pty: true, Cols: 120, Rows: 40})
		a := attach(t, s, se.ID, lodge.SessionAttachOptions{Cols: 120, Rows: 40})
		if err := a.h.WriteString("echo hello\n"); err != nil {
			t.Fatal(err)
		}
		hello := func() bool { return strings.Contains(a.text(), "\nhello") || strings.Contains(a.text(), "\rhello") }
		for deadline := time.Now().Add(15 * time.Second); !hello() && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
		}
		if !hello() {
			t.Fatalf("no hello in %q", a.text())
		}
		_ = a.h.WriteString("exit\n")
		if code, _ := a.wait(t); code != 0 {
			t.Fatal(code)
		}
	})
	t.Run("attach.readonly", func(t *testing.T) {
		se := newSession(t, s, lodge.CreateSessionOptions{Args: []string{"cat"}})
		a := attach(t, s, se.ID, lodge.SessionAttachOptions{ReadOnly: true})
		_ = a.h.WriteString("x")
		_ = a.h.Resize(10, 10)
		_ = a.h.Signal("INT")
		for i := 0; i < 3; i++ {
			select {
			case err := <-a.errs:
				var fb *lodge.ForbiddenError
				if !errors.As(err, &fb) || fb.Code != "forbidden" {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no forbidden")
			}
		}
		l, _ := s.SessionLog(ctx, se.ID)
		g, _ := s.GetSession(ctx, se.ID)
		if len(l) != 0 || g.State != "running" {
			t.Fatalf("%q %+v", l, g)
		}
	})
	t.Run("attach.pace", func(t *testing.T) {
		const size = 32 << 20
		se := newSession(t, s, lodge.CreateSessionOptions{Args: []string{"sh", "-c", "read x; head -c 33554432 /dev/zero"}})
		var got atomic.Int64
		var slow atomic.Bool
		slow.Store(true)
		// the handle reads the next message only when the callback returns
		a := attach(t, s, se.ID, lodge.SessionAttachOptions{Pace: true, OnStdout: func(c []byte) {
			got.Add(int64(len(c)))
			if slow.Load() {
				time.Sleep(20 * time.Millisecond)
			}
		}})
		eventually(t, "live", a.isLive)
		if err := a.h.WriteString("go\n"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond)
		g, err := s.GetSession(ctx, se.ID)
		// what lodged read beyond what this reader took: a quarter of the
		// ring, a read, and the sockets' buffers, not the whole 32 MiB
		ahead := g.OutputBytes - got.Load()
		slow.Store(false)
		if err != nil || ahead >= 12<<20 {
			t.Fatalf("the process ran %d bytes ahead (%v)", ahead, err)
		}
		if code, _ := a.wait(t); code != 0 || len(a.gaps) != 0 || got.Load() != size {
			t.Fatalf("code %d, gaps %v, %d bytes of %d", code, a.gaps, got.Load(), size)
		}
	})
	t.Run("attach.pace.readonly", func(t *testing.T) {
		se := newSession(t, s, lodge.CreateSessionOptions{Args: []string{"cat"}})
		_, err := s.AttachSession(tctx(t), se.ID, lodge.SessionAttachOptions{Pace: true, ReadOnly: true, NoResume: true})
		var br *lodge.BadRequestError
		if !errors.As(err, &br) || !strings.Contains(br.Message, "'pace'") {
			t.Fatal(err)
		}
		if g, err := s.GetSession(ctx, se.ID); err != nil || g.State != "running" {
			t.Fatalf("%+v %v", g, err)
		}
	})
	t.Run("attach.eof", func(t *testing.T) {
		se := newSession(t, s, lodge.CreateSessionOptions{Args: []string{"cat"}})
		a := attach(t, s, se.ID, lodge.SessionAttachOptions{})
		_ = a.h.WriteString("z\n")
		_ = a.h.CloseStdin()
		if code, _ := a.wait(t); code != 0 || a.text() != "z\n" {
			t.Fatalf("%d %q", code, a.text())
		}
	})
	t.Run("attach.resume", func(t *testing.T) {
		se := newSession(t, s, lodge.CreateSessionOptions{Command: "sleep 1; seq 1 1000000", BufferSize: 8 << 20})
		p := viaProxy(t)
		kit(t, "cut-after 1000000")
		defer kit(t, "cut-after 0")
		a := attach(t, p, se.ID, lodge.SessionAttachOptions{})
		want, _ := exec.Command("seq", "1", "1000000").Output()
		if code, _ := a.wait(t); code != 0 || a.text() != string(want) || a.h.Reconnects() < 3 || len(a.gaps) != 0 {
			t.Fatalf("code %d, %d bytes of %d, %d reconnects, gaps %v", code, len(a.text()), len(want), a.h.Reconnects(), a.gaps)
		}
	})
	t.Run("attach.resume.cuts", func(t *testing.T) {
		loop := "for i in $(seq 1 40); do seq $((i*1000)) $((i*1000+999)); sleep 0.1; done"
		se := newSession(t, s, lodge.CreateSessionOptions{Command: loop, BufferSize: 4 << 20})
		p := viaProxy(t)
		a := attach(t, p, se.ID, lodge.SessionAttachOptions{})
		for i := 0; i < 3; i++ {
			time.Sleep(time.Second)
			kit(t, "cut")
		}
		want, _ := exec.Command("sh", "-c", loop).Output()
		if code, _ := a.wait(t); code != 0 || a.text() != string(want) || len(a.gaps) != 0 {
			t.Fatalf("code %d, %d bytes of %d, gaps %v", code, len(a.text()), len(want), a.gaps)
		}
	})
	gapSession := func(t *testing.T) *lodge.Session {
		return newSession(t, s, lodge.CreateSessionOptions{
			Command: `sleep 1; head -c 20000000 /dev/zero | tr '\0' a; echo end`, BufferSize: 4096})
	}
	t.Run("attach.resume.gap", func(t *testing.T) {
		se := gapSession(t)
		p := viaProxy(t)
		kit(t, "cut-after 16384")
		defer kit(t, "cut-after 0")
		// since 0: what the process wrote before the attach counts too
		a := attach(t, p, se.ID, lodge.SessionAttachOptions{Since: lodge.Offset(0)})
		code, _ := a.wait(t)
		g, _ := s.GetSession(ctx, se.ID)
		var lost int64
		for _, x := range a.gaps {
			if x[0] >= x[1] {
				t.Fatalf("gap %v", x)
			}
			lost += x[1] - x[0]
		}
		if code != 0 || len(a.gaps) == 0 || int64(len(a.text()))+lost != g.OutputBytes {
			t.Fatalf("code %d, %d bytes + %d lost != %d, gaps %d", code, len(a.text()), lost, g.OutputBytes, len(a.gaps))
		}
	})
	t.Run("attach.resume.strict", func(t *testing.T) {
		se := gapSession(t)
		p := viaProxy(t)
		kit(t, "cut-after 16384")
		defer kit(t, "cut-after 0")
		a := attach(t, p, se.ID, lodge.SessionAttachOptions{Since: lodge.Offset(0), StrictGaps: true})
		_, _, err := a.h.Wait()
		var ge *lodge.GapError
		if !errors.As(err, &ge) || ge.From >= ge.To {
			t.Fatal(err)
		}
	})
	t.Run("attach.front_killed", func(t *testing.T) {
		se := newSession(t, s, lodge.CreateSessionOptions{Args: []string{"cat"}})
		a := attach(t, s, se.ID, lodge.SessionAttachOptions{})
		eventually(t, "live", a.isLive)
		kit(t, "kill-front")
		restarted := false
		defer func() {
			if !restarted {
				kit(t, "start-front")
			}
		}()
		_ = a.h.WriteString("after\n")
		eventually(t, "echo while the front is down", func() bool { return a.text() == "after\n" })
		kit(t, "start-front")
		restarted = true
		eventually(t, "front back", func() bool { return s.SignalSession(tctx(t), se.ID, "TERM") == nil })
		if code, sig := a.wait(t); code != -1 || sig != "TERM" || a.text() != "after\n" {
			t.Fatalf("%d %s %q", code, sig, a.text())
		}
	})
}

func TestErrors(t *testing.T) {
	s := connect(t)
	ctx := longCtx(t)
	is := func(t *testing.T, err error, target *lodge.APIError, status int) {
		t.Helper()
		var a *lodge.APIError
		if !errors.Is(err, target) || !errors.As(err, &a) || (status != 0 && a.Status != status) || a.Message == "" {
			t.Fatalf("want %s %d, got %v", target.Code, status, err)
		}
	}
	t.Run("error.bad_request", func(t *testing.T) {
		_, err := s.CreateSession(ctx, lodge.CreateSessionOptions{Name: uniq("go"), Args: []string{"cat"}, Pty: true, Cols: -1})
		is(t, err, lodge.ErrBadRequest, 400)
		_, err = s.GetSession(ctx, "a b")
		var br *lodge.BadRequestError
		if !errors.As(err, &br) {
			t.Fatal(err)
		}
		is(t, err, lodge.ErrBadRequest, 400)
	})
	t.Run("error.unauthorized", func(t *testing.T) {
		w, _ := lodge.Connect(ctx, lodge.Config{URL: os.Getenv("LODGE_URL"), Token: "wrong-token-0123456789"})
		_, err := w.Health(ctx)
		is(t, err, lodge.ErrUnauthorized, 401)
		_, err = w.AttachSession(ctx, "whatever", lodge.SessionAttachOptions{})
		is(t, err, lodge.ErrUnauthorized, 401)
		_, err = w.ExecStream(ctx, lodge.ExecStreamOptions{Command: "true"})
		var ue *lodge.UnauthorizedError
		if !errors.As(err, &ue) {
			t.Fatal(err)
		}
		is(t, err, lodge.ErrUnauthorized, 401)
	})
	t.Run("error.forbidden", func(t *testing.T) {
		se := newSession(t, s, lodge.CreateSessionOptions{Args: []string{"cat"}})
		a := attach(t, s, se.ID, lodge.SessionAttachOptions{ReadOnly: true})
		_ = a.h.WriteString("x")
		select {
		case err := <-a.errs:
			is(t, err, lodge.ErrForbidden, 0)
		case <-time.After(10 * time.Second):
			t.Fatal("no error")
		}
	})
	t.Run("error.not_found", func(t *testing.T) {
		_, err := s.GetSession(ctx, "no-such-session")
		is(t, err, lodge.ErrNotFound, 404)
		is(t, s.DeleteSession(ctx, "no-such-session"), lodge.ErrNotFound, 404)
		_, err = s.SessionLog(ctx, "no-such-session")
		is(t, err, lodge.ErrNotFound, 404)
		_, err = s.AttachSession(ctx, "no-such-session", lodge.SessionAttachOptions{})
		var nf *lodge.NotFoundError
		if !errors.As(err, &nf) {
			t.Fatal(err)
		}
		is(t, err, lodge.ErrNotFound, 404)
	})
	t.Run("error.conflict", func(t *testing.T) {
		se := newSession(t, s, lodge.CreateSessionOptions{Args: []string{"cat"}})
		_, err := s.CreateSession(ctx, lodge.CreateSessionOptions{Name: se.Name, Args: []string{"cat"}})
		is(t, err, lodge.ErrConflict, 409)
		ex := newSession(t, s, lodge.CreateSessionOptions{Command: "true"})
		if _, err := s.WaitSession(ctx, ex.ID); err != nil {
			t.Fatal(err)
		}
		is(t, s.SendInput(ctx, ex.ID, []byte("x")), lodge.ErrConflict, 409)
	})
	t.Run("error.payload_too_large", func(t *testing.T) {
		se := newSession(t, s, lodge.CreateSessionOptions{Args: []string{"cat"}})
		is(t, s.SendInput(ctx, se.ID, bytes.Repeat([]byte("a"), 9<<20)), lodge.ErrPayloadTooLarge, 413)
	})
	t.Run("error.spawn_failed", func(t *testing.T) {
		_, err := s.CreateSession(ctx, lodge.CreateSessionOptions{Name: uniq("go"), Command: "true", Workdir: "/nonexistent"})
		is(t, err, lodge.ErrSpawnFailed, 422)
		_, err = s.Exec(ctx, lodge.ExecOptions{Args: []string{"/nonexistent/program"}})
		is(t, err, lodge.ErrSpawnFailed, 422)
	})
	t.Run("error.unavailable", func(t *testing.T) {
		se := newSession(t, s, lodge.CreateSessionOptions{Command: "exec sleep 600"})
		if err := s.SendInput(ctx, se.ID, bytes.Repeat([]byte("a"), 3<<20)); err != nil {
			t.Fatal(err)
		}
		is(t, s.SendInput(ctx, se.ID, bytes.Repeat([]byte("a"), 2<<20)), lodge.ErrUnavailable, 503)
	})
}
