package analytics

import (
	"errors"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/backo-go"
)

func TestCloseWaitsForUploadsInFlight(t *testing.T) {
	var finished atomic.Bool
	g := newGate()
	srv := newRecorder(t, func(n int, w http.ResponseWriter) int {
		status := g.wait(n, w)
		finished.Store(true)
		return status
	})
	c, _ := newTestClient(t, srv.URL)
	t.Cleanup(g.open)
	c.Size = 1
	if err := c.Track(&Track{UserId: "u", Event: "e"}); err != nil {
		t.Fatal(err)
	}
	<-g.started // the upload is in flight
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	g.open()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if !finished.Load() {
		t.Fatal("Close returned before the upload in flight finished")
	}
}

func TestSecondCloseReturnsAtOnce(t *testing.T) {
	srv := newRecorder(t, nil)
	c, _ := newTestClient(t, srv.URL)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	within(t, "second Close", func() {
		if err := c.Close(); !errors.Is(err, ErrClosed) {
			t.Errorf("second Close = %v, want ErrClosed", err)
		}
	})
}

// A program may Close from a signal handler and again in main: the second
// Close must not return, letting the program exit, before the first has
// flushed.
func TestSecondCloseWaitsForTheFirst(t *testing.T) {
	g := newGate()
	srv := newRecorder(t, g.wait)
	c, _ := newTestClient(t, srv.URL)
	t.Cleanup(g.open)
	if err := c.Track(&Track{UserId: "u", Event: "e"}); err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() { first <- c.Close() }()
	<-g.started // the first Close is waiting for this upload
	second := make(chan error, 1)
	go func() { second <- c.Close() }()
	select {
	case err := <-second:
		t.Fatalf("a second Close returned (%v) while the first was still flushing", err)
	case <-time.After(50 * time.Millisecond):
	}
	g.open()
	if err := <-second; !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close = %v, want ErrClosed", err)
	}
	if n := len(srv.delivered(t)); n != 1 {
		t.Fatalf("the second Close returned with %d messages delivered, want 1", n)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
}

func TestCallsAfterCloseReturnErrClosed(t *testing.T) {
	srv := newRecorder(t, nil)
	c, _ := newTestClient(t, srv.URL)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	calls := map[string]error{
		"identify": c.Identify(&Identify{UserId: "u"}),
		"track":    c.Track(&Track{UserId: "u", Event: "e"}),
		"page":     c.Page(&Page{UserId: "u"}),
		"group":    c.Group(&Group{UserId: "u", GroupId: "g"}),
		"alias":    c.Alias(&Alias{UserId: "u", PreviousId: "p"}),
	}
	for name, err := range calls {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", name, err)
		}
	}
	if n := len(srv.requests()); n != 0 {
		t.Fatalf("%d requests", n)
	}
}

func TestCloseOfAnUnusedClientSendsNothing(t *testing.T) {
	srv := newRecorder(t, nil)
	c, _ := newTestClient(t, srv.URL)
	within(t, "Close", func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	if n := len(srv.requests()); n != 0 {
		t.Fatalf("%d requests", n)
	}
}

func TestCloseTimeoutAbandonsQueuedAndInFlightMessages(t *testing.T) {
	g := newGate()
	srv := newRecorder(t, g.wait)
	c, logs := newTestClient(t, srv.URL)
	t.Cleanup(g.open)
	c.Size = 1
	c.tune.maxUploads = 1
	c.CloseTimeout = 20 * time.Millisecond
	var f failures
	c.OnFailure = f.record
	for range 3 {
		if err := c.Track(&Track{UserId: "u", Event: "e"}); err != nil {
			t.Fatal(err)
		}
	}
	<-g.started // one upload in flight, two batches waiting for a slot
	var err error
	within(t, "Close with a stuck endpoint", func() { err = c.Close() })
	if err == nil || !strings.Contains(err.Error(), "timed out") || !strings.Contains(err.Error(), "3 undelivered") {
		t.Fatalf("Close = %v", err)
	}
	errs, count := f.snapshot()
	if count != 3 {
		t.Fatalf("OnFailure reported %d messages, want 3", count)
	}
	for _, e := range errs {
		if !errors.Is(e, errAbandoned) {
			t.Fatalf("failure %v is not errAbandoned", e)
		}
	}
	if !strings.Contains(logs.String(), "Close timed out") {
		t.Fatalf("timeout not logged: %q", logs.String())
	}
}

func TestZeroValueClientWorks(t *testing.T) {
	srv := newRecorder(t, nil)
	c := &Client{Endpoint: srv.URL, Logger: newTestLogger()}
	if err := c.Track(&Track{UserId: "u", Event: "e"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.delivered(t)); n != 1 {
		t.Fatalf("delivered %d", n)
	}
}

// copyClient copies a Client by value, as v2 code may (v2's state was all
// channels and pointers), without tripping go vet's copylocks check.
func copyClient(c *Client) *Client {
	cp := new(Client)
	reflect.ValueOf(cp).Elem().Set(reflect.ValueOf(c).Elem())
	return cp
}

// A Client copied by value after its first call shares the running client:
// the copy's calls are delivered, and closing either closes both.
func TestClientCopiedAfterFirstUseSharesTheRunningClient(t *testing.T) {
	srv := newRecorder(t, nil)
	c, _ := newTestClient(t, srv.URL)
	if err := c.Track(&Track{UserId: "u", Event: "original"}); err != nil {
		t.Fatal(err)
	}
	cp := copyClient(c)
	if err := cp.Track(&Track{UserId: "u", Event: "copy"}); err != nil {
		t.Fatal(err)
	}
	within(t, "the copy's Close", func() {
		if err := cp.Close(); err != nil {
			t.Error(err)
		}
	})
	if n := len(srv.delivered(t)); n != 2 {
		t.Fatalf("delivered %d, want the original's and the copy's", n)
	}
	if err := c.Track(&Track{UserId: "u", Event: "late"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("call on the original after the copy's Close = %v, want ErrClosed", err)
	}
	if err := c.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("the original's Close = %v, want ErrClosed", err)
	}
	if s, cs := c.Stats(), cp.Stats(); s != cs || s.Calls != 3 || s.Sent != 2 {
		t.Fatalf("stats of the original %+v and the copy %+v", s, cs)
	}
}

// Goroutines racing to make the first call on a zero Client start one
// running client between them.
func TestZeroValueClientStartsOnceUnderConcurrentFirstCalls(t *testing.T) {
	srv := newRecorder(t, nil)
	c := &Client{Endpoint: srv.URL, Logger: newTestLogger()}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for range 10 {
				if err := c.Track(&Track{UserId: "u", Event: "e"}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.delivered(t)); n != 160 {
		t.Fatalf("delivered %d, want 160", n)
	}
}

// With no CloseTimeout (the default), Close waits for every upload to end,
// however long its retries take, and reports what its flush lost.
func TestCloseWithoutDeadlineWaitsForTheRetriesToEnd(t *testing.T) {
	srv := newRecorder(t, func(int, http.ResponseWriter) int { return 503 })
	c, _ := newTestClient(t, srv.URL)
	c.tune.maxAttempts = 3
	var s sleeps
	c.tune.sleep = s.sleep // the waits are recorded, not slept
	c.tune.backo = backo.NewBacko(time.Hour, 2, 0, time.Hour)
	if err := c.Track(&Track{UserId: "u", Event: "lost"}); err != nil {
		t.Fatal(err)
	}
	err := c.Close()
	if err == nil || !strings.Contains(err.Error(), "1 undelivered") || !strings.Contains(err.Error(), "503") ||
		strings.Contains(err.Error(), "timed out") {
		t.Fatalf("Close = %v, want an error for the message its flush lost", err)
	}
	if n := len(srv.requests()); n != 3 {
		t.Fatalf("%d requests, want all 3 attempts", n)
	}
	if got := s.all(); len(got) != 2 || got[0] < time.Hour || got[1] < time.Hour {
		t.Fatalf("waits %v, want two of at least an hour, both waited for", got)
	}
}
