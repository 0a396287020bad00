package lodge_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The seed documents' Go examples (examples/seeds), built and run as
// programs against the daemon.

func buildSeed(t *testing.T, name string) string {
	t.Helper()
	needDaemon(t)
	bin := filepath.Join(t.TempDir(), name)
	out, err := exec.Command("go", "build", "-o", bin, "./examples/seeds/"+name).CombinedOutput()
	if err != nil {
		t.Fatalf("build %s: %v\n%s", name, err, out)
	}
	return bin
}

// runSeed runs a seed program; during, when not nil, is called with each
// line of its stdout as it comes.
func runSeed(t *testing.T, name string, during func(line string)) string {
	t.Helper()
	bin := buildSeed(t, name)
	cmd := exec.Command(bin)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(90*time.Second, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	var all strings.Builder
	r := bufio.NewReader(out)
	for {
		line, err := r.ReadString('\n')
		all.WriteString(line)
		if during != nil && line != "" {
			during(line)
		}
		if err == io.EOF {
			break
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%s: %v; stdout %q", name, err, all.String())
	}
	return all.String()
}

// helloLine is the output of echo hello, not the echo of the command.
var helloLine = regexp.MustCompile(`(^|\r)hello\r?\n$`)

var idLine = regexp.MustCompile(`^[0-9a-f]{32}\n`)

func deleteShell(t *testing.T) {
	s := connect(t)
	t.Cleanup(func() { _ = s.DeleteSession(context.Background(), "shell") })
	_ = s.DeleteSession(context.Background(), "shell")
}

func TestSeedSessionCreate(t *testing.T) {
	deleteShell(t)
	out := runSeed(t, "session-create", nil)
	if !idLine.MatchString(out) {
		t.Fatalf("want the session id, got %q", out)
	}
	se, err := connect(t).GetSession(tctx(t), "shell")
	if err != nil || se.ID+"\n" != out || !se.Pty || se.Cols != 120 || se.WorkDir != "/workspace" {
		t.Fatalf("%+v %v", se, err)
	}
}

// The attached bash is ended from outside, once hello was seen, by
// "exit\n" sent as the session's input over REST.
func TestSeedSessionAttach(t *testing.T) {
	deleteShell(t)
	s := connect(t)
	sent := false
	out := runSeed(t, "session-attach", func(line string) {
		if !sent && helloLine.MatchString(line) {
			sent = true
			if err := s.SendInput(context.Background(), "shell", []byte("exit\n")); err != nil {
				t.Error(err)
			}
		}
	})
	if !idLine.MatchString(out) || !sent || !strings.HasSuffix(out, "0  <nil>\n") {
		t.Fatalf("got %q", out)
	}
}

func TestSeedSessionLog(t *testing.T) {
	deleteShell(t)
	out := runSeed(t, "session-log", nil)
	if !idLine.MatchString(out) {
		t.Fatalf("got %q", out)
	}
}

func TestSeedExec(t *testing.T) {
	if out := runSeed(t, "exec", nil); out != "hello\n\n" {
		t.Fatalf("got %q", out)
	}
}

// npm install runs offline on a /workspace that has a package.json with
// no dependencies (made here when /workspace has none).
func TestSeedExecStream(t *testing.T) {
	if err := os.MkdirAll("/workspace", 0o755); err != nil {
		t.Skip("cannot make /workspace:", err)
	}
	pj := "/workspace/package.json"
	if _, err := os.Stat(pj); err != nil {
		_ = os.WriteFile(pj, []byte(`{"name":"seed","version":"1.0.0","private":true}`+"\n"), 0o644)
		t.Cleanup(func() { os.Remove(pj) })
	}
	if _, err := os.Stat("/workspace/.npmrc"); err != nil {
		_ = os.WriteFile("/workspace/.npmrc", []byte("offline=true\naudit=false\nfund=false\n"), 0o644)
		t.Cleanup(func() { os.Remove("/workspace/.npmrc") })
	}
	out := runSeed(t, "exec-stream", nil)
	if !strings.HasSuffix(out, "\n0 \n") {
		t.Fatalf("got %q", out)
	}
}

// The interactive bash of the PTY examples is ended from outside, once
// hello was seen, by SIGHUP to it (found under this test's daemon).
func hupBashOnHello(t *testing.T) func(string) {
	done := false
	return func(line string) {
		if done || !helloLine.MatchString(line) {
			return
		}
		done = true
		pids := lodgedDescendants("bash")
		if len(pids) == 0 {
			t.Error("no bash under the daemon")
		}
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGHUP)
		}
	}
}

func TestSeedExecPTY(t *testing.T) {
	out := runSeed(t, "exec-pty", hupBashOnHello(t))
	if !strings.Contains(out, "\rhello\r\n") || !strings.HasSuffix(out, "-1 HUP\n") {
		t.Fatalf("got %q", out)
	}
}

func TestSeedSignals(t *testing.T) {
	// INT or TERM may end the shell before it is interactive, else the
	// HUP from outside does.
	out := runSeed(t, "signals", hupBashOnHello(t))
	if !regexp.MustCompile(`\n-1 (INT|TERM|HUP)\n$`).MatchString(out) {
		t.Fatalf("got %q", out)
	}
}
