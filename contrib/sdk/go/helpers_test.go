package lodge_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	lodge "lodge.dev/sdk/go"
)

// needDaemon skips nothing: the suite runs only under tests/sdk/with-lodged.
func needDaemon(t *testing.T) {
	t.Helper()
	if os.Getenv("LODGE_URL") == "" {
		t.Fatal("LODGE_URL is unset: run under tests/sdk/with-lodged (tests/sdk/lang/go.sh)")
	}
}

func connect(t *testing.T) *lodge.Sandbox {
	t.Helper()
	needDaemon(t)
	s, err := lodge.Connect(context.Background(), lodge.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// tctx bounds one call or one subtest; longCtx a test of many subtests, or
// a stream of gigabytes, which a loaded machine (with -race) can take
// minutes to get through. Both are bounds on hanging, not on speed.
func tctx(t *testing.T) context.Context { return ctxFor(t, 60*time.Second) }

func longCtx(t *testing.T) context.Context { return ctxFor(t, 4*time.Minute) }

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func uniq(prefix string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return prefix + "-" + hex.EncodeToString(b)
}

// newSession creates a session deleted at the end of the test.
func newSession(t *testing.T, s *lodge.Sandbox, o lodge.CreateSessionOptions) *lodge.Session {
	t.Helper()
	if o.Name == "" {
		o.Name = uniq("go")
	}
	se, err := s.CreateSession(tctx(t), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.DeleteSession(context.Background(), se.ID) })
	return se
}

// kit sends one line to with-lodged's control connection.
func kit(t *testing.T, line string) string {
	t.Helper()
	c, err := net.Dial("tcp", os.Getenv("LODGE_KIT_CONTROL"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "%s\n", line)
	r, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.HasPrefix(r, "ok") {
		t.Fatalf("kit %s: %q %v", line, r, err)
	}
	return strings.TrimSpace(strings.TrimPrefix(r, "ok"))
}

// viaProxy is a client connected through the kit's proxy.
func viaProxy(t *testing.T) *lodge.Sandbox {
	port := kit(t, "proxy")
	s, err := lodge.Connect(context.Background(), lodge.Config{
		URL: "http://127.0.0.1:" + port, Token: os.Getenv("LODGE_TOKEN")})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func eventually(t *testing.T, what string, f func() bool) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); {
		if f() {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("never: %s", what)
}

func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// a zombie waiting for its reaper counts as gone
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] == "Z"
}

// buf collects output safely across goroutines.
type buf struct {
	mu sync.Mutex
	b  []byte
}

func (b *buf) add(p []byte) {
	b.mu.Lock()
	b.b = append(b.b, p...)
	b.mu.Unlock()
}

func (b *buf) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.b)
}

func (b *buf) contains(s string) bool { return strings.Contains(b.String(), s) }

func firstInt(s string) int {
	n, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(strings.TrimSpace(s), "\n", 2)[0]))
	return n
}

// lodgedDescendants finds processes named comm under this test's daemon.
func lodgedDescendants(comm string) []int {
	exe, _ := filepath.EvalSymlinks(os.Getenv("LODGED"))
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if c, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid)); strings.TrimSpace(string(c)) != comm {
			continue
		}
		for p := ppid(pid); p > 1; p = ppid(p) {
			if x, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", p)); x == exe {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

func ppid(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}
