package analytics

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"
)

// gate is a server-side barrier: requests block in wait until open.
type gate struct {
	once    sync.Once
	ch      chan struct{}
	started chan int
}

func newGate() *gate {
	g := &gate{ch: make(chan struct{}), started: make(chan int, 1000)}
	return g
}

func (g *gate) open() { g.once.Do(func() { close(g.ch) }) }

func (g *gate) wait(n int, _ http.ResponseWriter) int {
	g.started <- n
	<-g.ch
	return 200
}

func TestQueueIsBoundedAndCallsNeverBlockWhenEndpointIsStuck(t *testing.T) {
	g := newGate()
	srv := newRecorder(t, g.wait)
	c, _ := newTestClient(t, srv.URL)
	t.Cleanup(g.open) // runs before the client's Close
	c.Size = 1
	c.MaxQueueSize = 10
	c.tune.maxUploads = 1

	accepted, full := 0, 0
	within(t, "calls against a stuck endpoint", func() {
		for range 100 {
			switch err := c.Track(&Track{UserId: "u", Event: "e"}); {
			case err == nil:
				accepted++
			case errors.Is(err, ErrQueueFull):
				full++
			default:
				t.Errorf("unexpected error %v", err)
			}
		}
	})
	if accepted != 10 || full != 90 {
		t.Fatalf("accepted %d, rejected %d as full; want 10 and 90", accepted, full)
	}

	g.open()
	eventually(t, "the backlog to drain", func() bool { return len(srv.delivered(t)) == 10 })
	eventually(t, "room in the queue", func() bool { return c.held.Load() == 0 })
	if err := c.Track(&Track{UserId: "u", Event: "after"}); err != nil {
		t.Fatalf("call after the backlog drained: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.delivered(t)); n != 11 {
		t.Fatalf("delivered %d, want 11", n)
	}
}

func TestQueueBoundCountsMessagesBeingRetried(t *testing.T) {
	srv := newRecorder(t, func(int, http.ResponseWriter) int { return 503 })
	c, _ := newTestClient(t, srv.URL)
	c.MaxQueueSize = 3
	c.Size = 3
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	c.tune.sleep = sleepUntil(block)
	for range 3 {
		if err := c.Identify(&Identify{UserId: "u"}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "the first failed attempt", func() bool { return len(srv.requests()) >= 1 })
	if err := c.Identify(&Identify{UserId: "u"}); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("call while 3 messages are being retried: %v, want ErrQueueFull", err)
	}
}

// sleepUntil returns a sleep knob that waits for release (or Close's
// timeout) whatever the requested duration.
func sleepUntil(release <-chan struct{}) func(context.Context, time.Duration) error {
	return func(ctx context.Context, _ time.Duration) error {
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
