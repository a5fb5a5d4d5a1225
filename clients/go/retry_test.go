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
	for _, status := range []int{500, 502, 503, 504, 429} {
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
	for _, status := range []int{400, 401, 403, 404, 408, 413, 422} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			srv := newRecorder(t, func(int, http.ResponseWriter) int { return status })
			c, logs := newTestClient(t, srv.URL)
			var f failures
			c.OnFailure = f.record
			if err := c.Track(&Track{UserId: "u", Event: "e"}); err != nil {
				t.Fatal(err)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if n := len(srv.requests()); n != 1 {
				t.Fatalf("%d requests, want 1", n)
			}
			errs, count := f.snapshot()
			if len(errs) != 1 || count != 1 || !strings.Contains(errs[0].Error(), fmt.Sprint(status)) ||
				!strings.Contains(errs[0].Error(), "test failure") {
				t.Fatalf("OnFailure got %v for %d messages", errs, count)
			}
			if !strings.Contains(logs.String(), "failed to deliver batch of 1 messages after 1 attempt(s)") {
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
	if err := c.Close(); err != nil {
		t.Fatal(err)
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
	if err := c.Close(); err != nil {
		t.Fatal(err)
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

func TestHonoursRetryAfter(t *testing.T) {
	date := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		header string
		want   time.Duration
	}{
		{"7", 7 * time.Second},
		{"0", 0},
		{date.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{"100000", 5 * time.Minute}, // capped
	}
	for _, tc := range cases {
		t.Run(tc.header, func(t *testing.T) {
			srv := newRecorder(t, func(n int, w http.ResponseWriter) int {
				if n == 0 {
					w.Header().Set("Retry-After", tc.header)
					return 429
				}
				return 200
			})
			c, _ := newTestClient(t, srv.URL)
			var s sleeps
			c.tune.sleep = s.sleep
			c.tune.now = func() time.Time { return date }
			if err := c.Track(&Track{UserId: "u", Event: "e"}); err != nil {
				t.Fatal(err)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if got := s.all(); len(got) != 1 || got[0] != tc.want {
				t.Fatalf("waited %v, want [%v]", got, tc.want)
			}
			if n := len(srv.delivered(t)); n != 1 {
				t.Fatalf("delivered %d", n)
			}
		})
	}
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
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	got := s.all()
	ms := time.Millisecond
	ceilings := []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, time.Second, time.Second, time.Second}
	if len(got) != len(ceilings) {
		t.Fatalf("waited %v, want %d waits", got, len(ceilings))
	}
	for i, d := range got {
		if d < ceilings[i]/2 || d > ceilings[i] {
			t.Errorf("wait %d = %v, want within [%v, %v]", i, d, ceilings[i]/2, ceilings[i])
		}
	}
}

func TestBackoffJitters(t *testing.T) {
	b := backo.NewBacko(time.Second, 2, 0, time.Minute)
	seen := map[time.Duration]bool{}
	for range 100 {
		seen[backoff(b, 3)] = true
	}
	if len(seen) < 10 {
		t.Fatalf("only %d distinct waits in 100: no jitter", len(seen))
	}
	if d := backoff(b, 1000); d < 30*time.Second || d > time.Minute {
		t.Fatalf("huge attempt: %v", d)
	}
}

func TestRetryAfterParsing(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, h := range []string{"", "soon", "-3"} {
		if _, ok := retryAfter(h, now, time.Minute); ok {
			t.Errorf("%q parsed", h)
		}
	}
	if d, ok := retryAfter(now.Add(-time.Hour).Format(http.TimeFormat), now, time.Minute); !ok || d != 0 {
		t.Errorf("past date: %v %v", d, ok)
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
