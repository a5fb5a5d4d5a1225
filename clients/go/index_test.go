package analytics

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/segmentio/backo-go"
)

// itemServer is a collection API that refuses a batch holding a "poison"
// event with 400 and, when named is set, names the item in "index", as a
// Sluice server does. It records the size of every batch it receives.
type itemServer struct {
	*httptest.Server
	mu        sync.Mutex
	sizes     []int
	delivered int
	encodings []string
}

func newItemServer(t *testing.T, named bool) *itemServer {
	s := &itemServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		var b batchBody
		if err := json.NewDecoder(body).Decode(&b); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.sizes = append(s.sizes, len(b.Batch))
		s.encodings = append(s.encodings, r.Header.Get("Content-Encoding"))
		for i, m := range b.Batch {
			if m["event"] == "poison" {
				w.WriteHeader(http.StatusBadRequest)
				if named {
					fmt.Fprintf(w, `{"success":false,"code":"missing_field","message":"batch[%d]: refused","index":%d}`, i, i)
				} else {
					fmt.Fprintf(w, `{"success":false,"code":"missing_field","message":"batch[%d]: refused"}`, i)
				}
				return
			}
		}
		s.delivered += len(b.Batch)
		_, _ = io.WriteString(w, `{"success":true}`)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *itemServer) snapshot() (sizes []int, delivered int, encodings []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.sizes...), s.delivered, append([]string(nil), s.encodings...)
}

// trackWithPoison makes 100 calls, the one at position 37 refused by the
// server.
func trackWithPoison(t *testing.T, c *Client) {
	t.Helper()
	for i := range 100 {
		event := fmt.Sprint("ok-", i)
		if i == 37 {
			event = "poison"
		}
		if err := c.Track(&Track{UserId: "u", Event: event}); err != nil {
			t.Fatal(err)
		}
	}
}

// A Sluice server names the refused item of a batch: the library gives up
// that message alone and resends the others once, so one bad message
// costs one extra request instead of a halving search.
func TestBatchRefusedWith400NamingTheItemDropsItAloneInTwoRequests(t *testing.T) {
	srv := newItemServer(t, true)
	c, logs := newTestClient(t, srv.URL)
	c.Size = 1000 // one batch, sent by Close
	var f failures
	var refused []json.RawMessage
	c.OnFailure = func(err error, msgs []json.RawMessage) {
		f.record(err, msgs)
		refused = append(refused, msgs...) // one upload goroutine here
	}
	var succeeded atomic.Int64
	c.OnSuccess = func(msgs []json.RawMessage) { succeeded.Add(int64(len(msgs))) }
	trackWithPoison(t, c)
	if err := c.Close(); err == nil || !strings.Contains(err.Error(), "1 undelivered") {
		t.Fatalf("Close = %v, want an error for the one refused message", err)
	}
	sizes, delivered, _ := srv.snapshot()
	if len(sizes) != 2 || sizes[0] != 100 || sizes[1] != 99 || delivered != 99 {
		t.Fatalf("batch sizes %v, delivered %d; want [100 99] and 99", sizes, delivered)
	}
	errs, count := f.snapshot()
	if len(errs) != 1 || count != 1 || !strings.Contains(string(refused[0]), `"event":"poison"`) {
		t.Fatalf("OnFailure got %v for %d messages (%s), want the poison message alone", errs, count, refused)
	}
	if n := succeeded.Load(); n != 99 {
		t.Fatalf("OnSuccess saw %d messages, want 99", n)
	}
	if s := c.Stats(); s.Sent != 99 || s.Failed != 1 || s.Dropped != 1 || s.QueueDepth != 0 || s.QueueBytes != 0 {
		t.Fatalf("stats: %+v", s)
	}
	if n := strings.Count(logs.String(), "\n"); n != 1 {
		t.Fatalf("want one loss line:\n%s", logs.String())
	}
}

// A server that does not name the item gets the halving search.
func TestBatchRefusedWith400WithoutAnIndexFallsBackToHalving(t *testing.T) {
	srv := newItemServer(t, false)
	c, _ := newTestClient(t, srv.URL)
	c.Size = 1000
	trackWithPoison(t, c)
	_ = c.Close()
	sizes, delivered, _ := srv.snapshot()
	if delivered != 99 || len(sizes) <= 2 || len(sizes) > 20 {
		t.Fatalf("batch sizes %v, delivered %d; want 99 delivered by halving", sizes, delivered)
	}
}

func TestRefusedIndexReadsOnlyANonNegativeIndex(t *testing.T) {
	for body, want := range map[string]int{
		`{"success":false,"code":"x","message":"batch[3]: m","index":3}`: 3,
		`{"success":false,"code":"x","message":"batch[3]: m"}`:           -1,
		`{"index":-2}`:      -1,
		`{"index":"3"}`:     -1,
		`not json`:          -1,
		`{"index":0,"a":1}`: 0,
	} {
		if got := refusedIndex([]byte(body)); got != want {
			t.Errorf("refusedIndex(%s) = %d, want %d", body, got, want)
		}
	}
}

func TestGzipCompressesRequestBodies(t *testing.T) {
	srv := newItemServer(t, true)
	c, _ := newTestClient(t, srv.URL)
	c.Gzip = true
	for range 3 {
		if err := c.Track(&Track{UserId: "u", Event: "e"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	sizes, delivered, encodings := srv.snapshot()
	if delivered != 3 || len(sizes) != 1 || encodings[0] != "gzip" {
		t.Fatalf("batch sizes %v, delivered %d, encodings %q", sizes, delivered, encodings)
	}
}

// Retry settings on the Client apply to that Client alone, not to others
// that use the package variable Backo.
func TestPerClientRetrySettings(t *testing.T) {
	srv := newRecorder(t, func(int, http.ResponseWriter) int { return 503 })
	c, _ := newTestClient(t, srv.URL)
	c.tune.backo = nil
	c.Backo = backo.NewBacko(0, 2, 0, 0)
	c.MaxAttempts = 3
	if err := c.Track(&Track{UserId: "u", Event: "e"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err == nil {
		t.Fatal("Close returned nil after every attempt failed")
	}
	if n := len(srv.requests()); n != 3 {
		t.Fatalf("%d attempts, want MaxAttempts = 3", n)
	}
	if cfg := New("k").settings(); cfg.backo != Backo || cfg.maxAttempts != 10 {
		t.Fatalf("defaults: backo %p (package %p), %d attempts", cfg.backo, Backo, cfg.maxAttempts)
	}
}
