package analytics

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
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

func TestFullBufferMakesCallsWaitForRoomWithBlockWhenFull(t *testing.T) {
	g := newGate()
	srv := newRecorder(t, g.wait)
	c, _ := newTestClient(t, srv.URL)
	t.Cleanup(g.open) // runs before the client's Close
	c.Size = 1
	c.MaxQueueSize = 10
	c.BlockWhenFull = true
	c.tune.maxUploads = 1
	for i := range 10 {
		if err := c.Track(&Track{UserId: "u", Event: "e"}); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	<-g.started // one upload is stuck; the queue holds 10 messages
	returned := make(chan error, 1)
	go func() { returned <- c.Track(&Track{UserId: "u", Event: "11th"}) }()
	select {
	case err := <-returned:
		t.Fatalf("a call on a full queue returned (%v) instead of waiting", err)
	case <-time.After(50 * time.Millisecond):
	}
	if s := c.Stats(); s.QueueDepth != 10 || s.Dropped != 0 {
		t.Fatalf("stats while the call waits: %+v", s)
	}
	g.open()
	if err := <-returned; err != nil {
		t.Fatalf("the waiting call: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.delivered(t)); n != 11 {
		t.Fatalf("delivered %d, want 11", n)
	}
	if s := c.Stats(); s.Calls != 11 || s.Sent != 11 || s.Dropped != 0 || s.Waited != 1 || s.QueueDepth != 0 {
		t.Fatalf("stats after Close: %+v", s)
	}
}

func TestCallWaitingForRoomDropsItsMessageAfterCloseTimeout(t *testing.T) {
	g := newGate()
	srv := newRecorder(t, g.wait)
	c, logs := newTestClient(t, srv.URL)
	t.Cleanup(g.open)
	c.Size = 1
	c.MaxQueueSize = 2
	c.BlockWhenFull = true
	c.tune.maxUploads = 1
	c.CloseTimeout = 30 * time.Millisecond
	var f failures
	c.OnFailure = f.record
	for range 2 {
		if err := c.Track(&Track{UserId: "u", Event: "e"}); err != nil {
			t.Fatal(err)
		}
	}
	m := &Track{UserId: "u", Event: "late"}
	var err error
	within(t, "a call on a queue that stays full", func() { err = c.Track(m) })
	if !errors.Is(err, ErrQueueFull) {
		t.Fatalf("call = %v, want ErrQueueFull after the timeout", err)
	}
	assertDropReported(t, c, &f, logs, m.MessageId, ErrQueueFull)
}

func TestFullBufferRefusesAtOnceByDefaultAndLogsASummary(t *testing.T) {
	g := newGate()
	srv := newRecorder(t, g.wait)
	c, logs := newTestClient(t, srv.URL)
	t.Cleanup(g.open)
	c.Size = 1
	c.MaxQueueSize = 10
	c.tune.maxUploads = 1
	var f failures
	c.OnFailure = f.record

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
	if errs, count := f.snapshot(); len(errs) != 90 || count != 90 || !errors.Is(errs[0], ErrQueueFull) {
		t.Fatalf("OnFailure got %d reports for %d messages", len(errs), count)
	}
	// One line at the first drop, the rest summarised later (here at Close).
	if out := logs.String(); strings.Count(out, "\n") != 1 ||
		!strings.Contains(out, "lost 1 message(s), refused because the buffer was full: analytics: queue is full") {
		t.Fatalf("want one line for the first drop, got:\n%s", out)
	}
	if s := c.Stats(); s.Calls != 100 || s.Dropped != 90 || s.Waited != 0 || s.QueueDepth != 10 {
		t.Fatalf("stats: %+v", s)
	}

	g.open()
	eventually(t, "the backlog to drain", func() bool { return c.Stats().QueueDepth == 0 })
	if err := c.Track(&Track{UserId: "u", Event: "after"}); err != nil {
		t.Fatalf("call after the backlog drained: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.delivered(t)); n != 11 {
		t.Fatalf("delivered %d, want 11", n)
	}
	if out := logs.String(); !strings.Contains(out, "lost 89 more message(s), refused because the buffer was full") {
		t.Fatalf("no summary of the other 89 drops:\n%s", out)
	}
}

// At the defaults the server being away costs memory, not time: 12,000
// calls (more than the 10,000 messages after which calls used to wait)
// against a server that answers 503 all return at once, and every message
// is held for delivery.
func TestCallsAtTheDefaultsDoNotWaitWhileTheServerIsDown(t *testing.T) {
	srv := newRecorder(t, func(int, http.ResponseWriter) int { return 503 })
	c, _ := newTestClient(t, srv.URL)
	block := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(block) }) })
	c.tune.sleep = sleepUntil(block) // every retry waits until the test ends
	c.CloseTimeout = time.Millisecond
	within(t, "12,000 calls while the server is down", func() {
		for i := range 12000 {
			if err := c.Track(&Track{UserId: "u", Event: "e"}); err != nil {
				t.Errorf("call %d: %v", i, err)
				return
			}
		}
	})
	if s := c.Stats(); s.QueueDepth != 12000 || s.Waited != 0 || s.Dropped != 0 || s.QueueBytes <= 0 {
		t.Fatalf("stats: %+v", s)
	}
}

// The byte budget bounds the buffer whatever the message count: a call
// whose message would pass it is refused at once, without waiting.
func TestByteBudgetRefusesACallThatWouldPassIt(t *testing.T) {
	g := newGate()
	srv := newRecorder(t, g.wait)
	c, _ := newTestClient(t, srv.URL)
	t.Cleanup(g.open)
	c.Size = 1
	c.tune.maxUploads = 1
	big := strings.Repeat("x", 1000)
	c.MaxQueueBytes = 3500 // three messages of about 1080 bytes
	accepted := 0
	within(t, "calls against a stuck endpoint", func() {
		for range 10 {
			if err := c.Track(&Track{UserId: "u", Event: big}); err == nil {
				accepted++
			} else if !errors.Is(err, ErrQueueFull) {
				t.Fatalf("unexpected error %v", err)
			}
		}
	})
	if s := c.Stats(); accepted != 3 || s.QueueDepth != 3 || s.QueueBytes > 3500 || s.Refused != 7 || s.Waited != 0 {
		t.Fatalf("accepted %d; stats %+v", accepted, s)
	}
	g.open()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if s := c.Stats(); s.QueueBytes != 0 || s.Sent != 3 {
		t.Fatalf("after Close: %+v", s)
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

func TestCallsWaitingForRoomWhenCloseStartsAreDelivered(t *testing.T) {
	g := newGate()
	srv := newRecorder(t, g.wait)
	c, _ := newTestClient(t, srv.URL)
	t.Cleanup(g.open)
	c.Size = 1
	c.MaxQueueSize = 1
	c.BlockWhenFull = true
	c.tune.maxUploads = 1
	if err := c.Track(&Track{UserId: "u", Event: "first"}); err != nil {
		t.Fatal(err)
	}
	<-g.started
	waiting := make(chan error, 1)
	go func() { waiting <- c.Track(&Track{UserId: "u", Event: "second"}) }()
	eventually(t, "the call to wait", func() bool {
		_, waiters, _, _ := c.core().q.state()
		return waiters == 1
	})
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	eventually(t, "Close to start", func() bool { _, _, _, cl := c.core().q.state(); return cl })
	g.open()
	if err := <-waiting; err != nil {
		t.Fatalf("the waiting call: %v", err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if n := len(srv.delivered(t)); n != 2 {
		t.Fatalf("delivered %d, want 2", n)
	}
}

// assertDropReported checks that one refused message was counted, passed
// to OnFailure with the error want, and logged although Verbose is off
// (v2-style code ignores the errors calls return).
func assertDropReported(t *testing.T, c *Client, f *failures, logs *syncBuffer, id string, want error) {
	t.Helper()
	errs, count := f.snapshot()
	if len(errs) != 1 || count != 1 || !errors.Is(errs[0], want) {
		t.Fatalf("OnFailure got %v for %d messages, want one %v", errs, count, want)
	}
	if out := logs.String(); strings.Contains(out, "dropped track message "+id) ||
		!strings.Contains(out, "lost 1 message(s), refused") || !strings.Contains(out, want.Error()) {
		t.Fatalf("want one loss line naming %v, and no per-call line without Verbose:\n%s", want, out)
	}
	if s := c.Stats(); s.Dropped != 1 {
		t.Fatalf("stats: %+v, want 1 dropped", s)
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

// Without a timeout (no CloseTimeout, the default) a call on a full queue
// waits until room appears, as a v2 call blocked on v2's queue, instead of
// dropping its message.
func TestFullQueueWithoutTimeoutWaitsUntilRoomAppears(t *testing.T) {
	var q queue
	q.init(&settings{maxQueued: 1, maxBytes: 1 << 20, flushAt: 1, batchMax: 1}, 1<<20)
	var waited atomic.Int64
	if _, err := q.push(json.RawMessage(`{}`), true, 0, nil, &waited); err != nil {
		t.Fatal(err)
	}
	pushed := make(chan error, 1)
	go func() {
		_, err := q.push(json.RawMessage(`{}`), true, 0, nil, &waited)
		pushed <- err
	}()
	select {
	case err := <-pushed:
		t.Fatalf("a call on a full queue returned %v instead of waiting", err)
	case <-time.After(50 * time.Millisecond):
	}
	batch := q.take(true)
	if len(batch) != 1 {
		t.Fatalf("took %d messages", len(batch))
	}
	q.release(batch) // the upload ended
	if err := <-pushed; err != nil {
		t.Fatalf("the waiting call: %v", err)
	}
	if waited.Load() != 1 {
		t.Fatalf("waited = %d", waited.Load())
	}
}

// Close giving up (CloseTimeout) ends the wait with ErrClosed.
func TestFullQueueWaitEndsWhenCloseGivesUp(t *testing.T) {
	var q queue
	q.init(&settings{maxQueued: 1, maxBytes: 1 << 20, flushAt: 1, batchMax: 1}, 1<<20)
	var waited atomic.Int64
	if _, err := q.push(json.RawMessage(`{}`), true, 0, nil, &waited); err != nil {
		t.Fatal(err)
	}
	cancel := make(chan struct{})
	pushed := make(chan error, 1)
	go func() {
		_, err := q.push(json.RawMessage(`{}`), true, 0, cancel, &waited)
		pushed <- err
	}()
	close(cancel)
	if err := <-pushed; !errors.Is(err, ErrClosed) {
		t.Fatalf("the waiting call = %v, want ErrClosed", err)
	}
}
