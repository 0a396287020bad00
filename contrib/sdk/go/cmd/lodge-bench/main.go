// Command lodge-bench measures the Go SDK against LODGE_URL/LODGE_TOKEN and
// prints one JSON line: exec round trip p50/p99 of /bin/true (2,000 calls
// after 50 untimed), exec-stream throughput of 1 GiB in GB/s (10^9 bytes),
// and PTY keystroke round trip p50/p99 (2,000 one-byte echoes after 100
// untimed). -execs, -keys and -bytes change the sizes; -cpuprofile writes a
// profile for go tool pprof.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"runtime/pprof"
	"sort"
	"time"

	lodge "lodge.dev/sdk/go"
)

func percentile(d []time.Duration, p float64) float64 {
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return float64(d[int(float64(len(d)-1)*p)].Nanoseconds()) / 1e3
}

func main() {
	nexec := flag.Int("execs", 2000, "timed execs of /bin/true")
	nkey := flag.Int("keys", 2000, "timed keystroke round trips")
	nbytes := flag.Int64("bytes", 1<<30, "bytes of the exec stream")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile (runtime/pprof) to this file")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	ctx := context.Background()
	s, err := lodge.Connect(ctx, lodge.Config{})
	if err != nil {
		log.Fatal(err)
	}
	execs := make([]time.Duration, *nexec)
	for i := -50; i < len(execs); i++ {
		t0 := time.Now()
		if _, err := s.Exec(ctx, lodge.ExecOptions{Args: []string{"/bin/true"}}); err != nil {
			log.Fatal(err)
		}
		if i >= 0 {
			execs[i] = time.Since(t0)
		}
	}

	var n int64
	t0 := time.Now()
	h, err := s.ExecStream(ctx, lodge.ExecStreamOptions{Command: fmt.Sprintf("head -c %d /dev/zero", *nbytes),
		OnStdout: func(b []byte) { n += int64(len(b)) }})
	if err != nil {
		log.Fatal(err)
	}
	if _, err := h.Wait(); err != nil || n != *nbytes {
		log.Fatal(err, n)
	}
	gbps := float64(n) / time.Since(t0).Seconds() / 1e9

	se, err := s.CreateSession(ctx, lodge.CreateSessionOptions{Name: fmt.Sprintf("bench-%d", os.Getpid()),
		Command: "stty raw -echo && printf R && exec cat", Pty: true})
	if err != nil {
		log.Fatal(err)
	}
	defer s.DeleteSession(ctx, se.ID)
	got := make(chan byte, 16)
	a, err := s.AttachSession(ctx, se.ID, lodge.SessionAttachOptions{
		OnStdout: func(b []byte) {
			for _, c := range b {
				got <- c
			}
		}})
	if err != nil {
		log.Fatal(err)
	}
	for c := range got {
		if c == 'R' {
			break
		}
	}
	keys := make([]time.Duration, *nkey)
	for i := -100; i < len(keys); i++ {
		t0 := time.Now()
		if err := a.Write([]byte{'k'}); err != nil {
			log.Fatal(err)
		}
		if c := <-got; c != 'k' {
			log.Fatalf("echo %q", c)
		}
		if i >= 0 {
			keys[i] = time.Since(t0)
		}
	}
	_ = a.Detach()

	out, _ := json.Marshal(struct {
		SDK     string  `json:"sdk"`
		ExecP50 float64 `json:"exec_p50_us"`
		ExecP99 float64 `json:"exec_p99_us"`
		Stream  float64 `json:"stream_gbps"`
		KeyP50  float64 `json:"key_p50_us"`
		KeyP99  float64 `json:"key_p99_us"`
	}{"go", percentile(execs, .5), percentile(execs, .99), gbps,
		percentile(keys, .5), percentile(keys, .99)})
	fmt.Println(string(out))
}
