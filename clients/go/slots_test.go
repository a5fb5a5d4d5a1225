package analytics

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// An upload waiting to retry gives its slot back: with a single slot, a
// batch that the server asked to retry later must not stop the next batch.
func TestRetryingUploadDoesNotHoldASlotWhileItWaits(t *testing.T) {
	srv := newRecorder(t, func(n int, w http.ResponseWriter) int {
		if n == 0 {
			w.Header().Set("Retry-After", "60")
			return 429
		}
		return 200
	})
	c, _ := newTestClient(t, srv.URL)
	c.Size = 1
	c.tune.maxUploads = 1
	release := make(chan struct{})
	c.tune.sleep = sleepUntil(release)
	if err := c.Track(&Track{UserId: "u", Event: "first"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the first attempt", func() bool { return len(srv.requests()) == 1 })
	if err := c.Track(&Track{UserId: "u", Event: "second"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the second batch to be delivered while the first waits", func() bool {
		return len(srv.delivered(t)) == 1
	})
	close(release)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.delivered(t)); n != 2 {
		t.Fatalf("delivered %d, want 2", n)
	}
	if s := c.Stats(); s.Sent != 2 || s.Retried != 1 || s.Dropped != 0 {
		t.Fatalf("stats: %+v", s)
	}
}

// However many batches are waiting to retry, at most maxUploads requests
// are in flight.
func TestAtMostMaxUploadsRequestsInFlight(t *testing.T) {
	var inflight, peak atomic.Int64
	var mu sync.Mutex
	seen := map[string]bool{} // batches, by their first message
	var srv *recorder
	srv = newRecorder(t, func(n int, _ http.ResponseWriter) int {
		now := inflight.Add(1)
		defer inflight.Add(-1)
		for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
		}
		time.Sleep(time.Millisecond)
		first := srv.requests()[n].decode(t).Batch[0]["messageId"].(string)
		mu.Lock()
		defer mu.Unlock()
		if !seen[first] {
			seen[first] = true
			return 503 // the first attempt of every batch fails
		}
		return 200
	})
	c, _ := newTestClient(t, srv.URL)
	c.Size = 1
	c.tune.maxUploads = 2
	for range 40 {
		if err := c.Page(&Page{UserId: "u"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.delivered(t)); n != 40 {
		t.Fatalf("delivered %d, want 40", n)
	}
	if p := peak.Load(); p > 2 {
		t.Fatalf("%d requests were in flight at once, want at most 2", p)
	}
}

// Close waits for uploads that are waiting to retry, not only for those
// in flight.
func TestCloseWaitsForUploadsWaitingToRetry(t *testing.T) {
	srv := newRecorder(t, func(n int, _ http.ResponseWriter) int {
		if n == 0 {
			return 503
		}
		return 200
	})
	c, _ := newTestClient(t, srv.URL)
	c.Size = 1
	release := make(chan struct{})
	var sleeping atomic.Bool
	c.tune.sleep = func(ctx context.Context, d time.Duration) error {
		sleeping.Store(true)
		return sleepUntil(release)(ctx, d)
	}
	if err := c.Track(&Track{UserId: "u", Event: "e"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the upload to wait for its retry", sleeping.Load)
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while an upload waited to retry", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if n := len(srv.delivered(t)); n != 1 {
		t.Fatalf("delivered %d, want 1", n)
	}
}

// While a batch waits to retry, the server is failing: at the defaults new
// messages wait for a full request's worth instead of going out in small
// batches that would each fail and retry on their own. When the retry
// ends, they go out at once.
func TestWhileABatchWaitsToRetrySmallBatchesWait(t *testing.T) {
	srv := newRecorder(t, func(n int, _ http.ResponseWriter) int {
		if n == 0 {
			return 503
		}
		return 200
	})
	c, _ := newTestClient(t, srv.URL)
	release := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	t.Cleanup(open) // before Close, should the test fail early
	var sleeping atomic.Bool
	c.tune.sleep = func(ctx context.Context, d time.Duration) error {
		sleeping.Store(true)
		return sleepUntil(release)(ctx, d)
	}
	for range defaultFlushAt {
		if err := c.Track(&Track{UserId: "u", Event: "first"}); err != nil {
			t.Fatal(err)
		}
	}
	// Until the client has its answer, the batch is in flight, not waiting
	// to retry: wait for the retry's wait, not for the request's arrival.
	eventually(t, "the first batch to wait for its retry", sleeping.Load)
	for range 100 {
		if err := c.Track(&Track{UserId: "u", Event: "later"}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(50 * time.Millisecond)
	if n := len(srv.requests()); n != 1 {
		t.Fatalf("%d requests while the first batch waits to retry, want 1", n)
	}
	open()
	eventually(t, "the backlog after the retry", func() bool { return len(srv.delivered(t)) == 120 })
	if n := len(srv.requests()); n != 3 {
		t.Fatalf("%d requests, want 3: the failed one, its retry, the backlog", n)
	}
}
