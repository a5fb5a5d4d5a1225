package analytics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/backo-go"
)

func TestRetriesServerErrorsAndTooManyRequests(t *testing.T) {
	for _, status := range []int{500, 502, 503, 504, 429, 408} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			srv := newRecorder(t, func(n int, _ http.ResponseWriter) int {
				if n < 2 {
					return status
				}
				return 200
			})
			c, _ := newTestClient(t, srv.URL)
			var f failures
			c.OnFailure = f.record
			if err := c.Track(&Track{UserId: "u", Event: "e"}); err != nil {
				t.Fatal(err)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			reqs := srv.requests()
			if len(reqs) != 3 {
				t.Fatalf("%d requests, want 3 (two failures, then success)", len(reqs))
			}
			if !bytes.Equal(reqs[0].body, reqs[2].body) {
				t.Fatal("a retry changed the body")
			}
			if errs, _ := f.snapshot(); len(errs) != 0 {
				t.Fatalf("failure reported for a delivered batch: %v", errs)
			}
		})
	}
}

func TestDoesNotRetryOtherClientErrors(t *testing.T) {
	for _, status := range []int{400, 401, 403, 404, 413, 422} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			srv := newRecorder(t, func(int, http.ResponseWriter) int { return status })
			c, logs := newTestClient(t, srv.URL)
			var f failures
			c.OnFailure = f.record
			if err := c.Track(&Track{UserId: "u", Event: "e"}); err != nil {
				t.Fatal(err)
			}
			if err := c.Close(); err == nil || !strings.Contains(err.Error(), "1 undelivered") ||
				!strings.Contains(err.Error(), fmt.Sprint(status)) {
				t.Fatalf("Close = %v, want an error counting the lost message and naming %d", err, status)
			}
			if n := len(srv.requests()); n != 1 {
				t.Fatalf("%d requests, want 1", n)
			}
			errs, count := f.snapshot()
			if len(errs) != 1 || count != 1 || !strings.Contains(errs[0].Error(), fmt.Sprint(status)) ||
				!strings.Contains(errs[0].Error(), "test failure") {
				t.Fatalf("OnFailure got %v for %d messages", errs, count)
			}
			if !strings.Contains(logs.String(), "lost 1 message(s), not delivered: analytics: server answered") {
				t.Fatalf("failure not logged: %q", logs.String())
			}
		})
	}
}

func TestRetriesNetworkErrors(t *testing.T) {
	var mu sync.Mutex
	drops := 2
	rec := &recorder{}
	// Close the connection without an answer twice, then serve normally.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		drop := drops > 0
		drops--
		mu.Unlock()
		if drop {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
			return
		}
		rec.serve(w, r)
	}))
	defer srv.Close()
	c, _ := newTestClient(t, srv.URL)
	if err := c.Track(&Track{UserId: "u", Event: "e"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(rec.delivered(t)); n != 1 {
		t.Fatalf("delivered %d, want 1 after network errors", n)
	}
}

func TestGivesUpAfterMaxAttempts(t *testing.T) {
	srv := newRecorder(t, func(int, http.ResponseWriter) int { return 503 })
	c, _ := newTestClient(t, srv.URL)
	c.tune.maxAttempts = 4
	var f failures
	c.OnFailure = f.record
	for range 3 {
		if err := c.Page(&Page{UserId: "u"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err == nil || !strings.Contains(err.Error(), "3 undelivered") {
		t.Fatalf("Close = %v, want an error counting 3 lost messages", err)
	}
	if n := len(srv.requests()); n != 4 {
		t.Fatalf("%d requests, want 4", n)
	}
	if errs, count := f.snapshot(); len(errs) != 1 || count != 3 || !strings.Contains(errs[0].Error(), "503") {
		t.Fatalf("OnFailure got %v for %d messages", errs, count)
	}
}

func TestUnreachableEndpointFailsAfterRetries(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens there now
	c, _ := newTestClient(t, "http://"+addr)
	c.tune.maxAttempts = 3
	var f failures
	c.OnFailure = f.record
	if err := c.Track(&Track{UserId: "u", Event: "e"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err == nil || !strings.Contains(err.Error(), "sending batch") {
		t.Fatalf("Close = %v, want an error naming the last failure", err)
	}
	if errs, count := f.snapshot(); len(errs) != 1 || count != 1 || !strings.Contains(errs[0].Error(), "sending batch") {
		t.Fatalf("OnFailure got %v for %d messages", errs, count)
	}
}

// sleeps records the waits a client asks for instead of sleeping.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d = append(s.d, d)
	return ctx.Err()
}

func (s *sleeps) all() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

func TestBackoffGrowsExponentiallyWithJitterUpToACap(t *testing.T) {
	srv := newRecorder(t, func(int, http.ResponseWriter) int { return 500 })
	c, _ := newTestClient(t, srv.URL)
	var s sleeps
	c.tune.sleep = s.sleep
	c.tune.backo = backo.NewBacko(100*time.Millisecond, 2, 0, time.Second)
	c.tune.maxAttempts = 8
	if err := c.Track(&Track{UserId: "u", Event: "e"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err == nil {
		t.Fatal("Close returned nil after the batch failed")
	}
	got := s.all()
	ms := time.Millisecond
	base := []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, time.Second, time.Second, time.Second}
	if len(got) != len(base) {
		t.Fatalf("waited %v, want %d waits", got, len(base))
	}
	for i, d := range got {
		if d < base[i] || d > base[i]*3/2 {
			t.Errorf("wait %d = %v, want within [%v, %v]", i, d, base[i], base[i]*3/2)
		}
	}
}

// With the default Backo, the ten attempts span at least analytics-go v2's
// schedule: its last attempt came 32.7 s after the first, and every wait
// is at least v2's.
func TestDefaultScheduleIsNeverShorterThanV2s(t *testing.T) {
	srv := newRecorder(t, func(int, http.ResponseWriter) int { return 503 })
	c, _ := newTestClient(t, srv.URL)
	c.tune.backo = nil // the package variable Backo, v2's default
	var s sleeps
	c.tune.sleep = s.sleep
	if err := c.Track(&Track{UserId: "u", Event: "e"}); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()
	got := s.all()
	v2 := backo.DefaultBacko()
	if len(got) != 9 {
		t.Fatalf("waited %v, want 9 waits between 10 attempts", got)
	}
	var total time.Duration
	for i, d := range got {
		if d < v2.Duration(i) {
			t.Errorf("wait %d = %v, shorter than v2's %v", i, d, v2.Duration(i))
		}
		total += d
	}
	if total < 32700*time.Millisecond {
		t.Fatalf("the ten attempts span %v, v2's span 32.7s", total)
	}
}

func TestBackoffJitters(t *testing.T) {
	b := backo.NewBacko(time.Second, 2, 0, time.Minute)
	seen := map[time.Duration]bool{}
	for range 100 {
		d := backoff(b, 3)
		if d < 8*time.Second || d > 12*time.Second {
			t.Fatalf("backoff(3) = %v, want within [8s, 12s]", d)
		}
		seen[d] = true
	}
	if len(seen) < 10 {
		t.Fatalf("only %d distinct waits in 100: no jitter", len(seen))
	}
	if d := backoff(b, 1000); d < time.Minute || d > 90*time.Second {
		t.Fatalf("huge attempt: %v", d)
	}
}

func TestCloseTimeoutInterruptsRetries(t *testing.T) {
	srv := newRecorder(t, func(int, http.ResponseWriter) int { return 503 })
	c, _ := newTestClient(t, srv.URL)
	c.tune.backo = backo.NewBacko(time.Hour, 2, 0, time.Hour) // far longer than the test
	c.CloseTimeout = 20 * time.Millisecond
	var f failures
	c.OnFailure = f.record
	if err := c.Track(&Track{UserId: "u", Event: "e"}); err != nil {
		t.Fatal(err)
	}
	var err error
	within(t, "Close", func() { err = c.Close() })
	if err == nil || !strings.Contains(err.Error(), "1 undelivered messages were dropped") {
		t.Fatalf("Close = %v", err)
	}
	if errs, count := f.snapshot(); len(errs) != 1 || count != 1 || !errors.Is(errs[0], errAbandoned) {
		t.Fatalf("OnFailure got %v for %d messages", errs, count)
	}
}
