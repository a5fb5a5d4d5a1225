package analytics

import (
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
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

func TestCloseDuringCloseReturnsAtOnce(t *testing.T) {
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
	within(t, "a concurrent second Close", func() {
		if err := c.Close(); !errors.Is(err, ErrClosed) {
			t.Errorf("second Close = %v, want ErrClosed", err)
		}
	})
	g.open()
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
