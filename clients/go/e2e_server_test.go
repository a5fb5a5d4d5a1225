package analytics_test

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// sluice is a running server process.
type sluice struct {
	base, token string
	out         *lockedBuffer
}

// startSluice starts "bin serve" on a free loopback port with a fresh data
// directory and admin token, waits until GET /ready answers 200, and stops
// it with SIGTERM when the test ends.
func startSluice(t *testing.T, bin string) *sluice {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	tok := make([]byte, 24)
	_, _ = rand.Read(tok)
	s := &sluice{base: "http://" + addr, token: hex.EncodeToString(tok), out: &lockedBuffer{}}

	cmd := exec.Command(bin, "serve")
	// The server reads SLUICE_* variables as configuration; pass on none of
	// the test's own (SLUICE_BIN, SLUICE_E2E, a developer's settings).
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SLUICE_") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env,
		"SLUICE_LISTEN="+addr,
		"SLUICE_DATA_DIR="+t.TempDir(),
		"SLUICE_ADMIN_TOKEN="+s.token,
		// Receivers listen on loopback, which the SSRF guard refuses by default.
		`SLUICE_DELIVERY__ALLOW_NETWORKS=["127.0.0.0/8","::1/128"]`,
	)
	cmd.Stdout, cmd.Stderr = s.out, s.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			t.Errorf("sluice did not exit within 10s of SIGTERM")
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("sluice output:\n%s", s.out.String())
		}
	})

	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-exited:
			t.Fatalf("sluice exited before it was ready:\n%s", s.out.String())
		default:
		}
		res, err := http.Get(s.base + "/ready")
		if err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			_ = res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("sluice not ready after 30s (last error %v):\n%s", err, s.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// admin calls the admin API, checks the status and decodes the answer.
func (s *sluice) admin(t *testing.T, method, path string, body interface{}, status int, out interface{}) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.base+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(res.Body, 4<<20))
	if res.StatusCode != status {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, res.StatusCode, status, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, data)
		}
	}
}

// receiver is a webhook endpoint that records every POST.
type receiver struct {
	*httptest.Server
	mu   sync.Mutex
	got  []delivery
	more chan struct{}
}

type delivery struct {
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{more: make(chan struct{}, 100)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
		if req.Method == http.MethodPost {
			r.mu.Lock()
			r.got = append(r.got, delivery{header: req.Header.Clone(), body: body})
			r.mu.Unlock()
			select {
			case r.more <- struct{}{}:
			default:
			}
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(r.Close)
	return r
}

// waitFor waits until n deliveries arrived or the timeout passed, then
// lets a moment pass for unexpected extra deliveries and returns them all.
func (r *receiver) waitFor(t *testing.T, n int, timeout time.Duration) []delivery {
	t.Helper()
	deadline := time.After(timeout)
	for {
		r.mu.Lock()
		have := len(r.got)
		r.mu.Unlock()
		if have >= n {
			break
		}
		select {
		case <-r.more:
		case <-deadline:
			t.Fatalf("receiver got %d of %d webhook POSTs within %v", have, n, timeout)
		}
	}
	time.Sleep(200 * time.Millisecond) // surface duplicates, if any
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > 1<<20 { // keep the tail of a chatty server bounded
		return len(p), nil
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// testWriter sends the library's log lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
