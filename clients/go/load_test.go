package analytics

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// These are correctness tests under load, not timed ones: with default
// settings and a server that answers after 50 ms, every accepted call must
// reach the server exactly once, and no call may be refused.

// slowCollector is a local collection API that answers after a delay and
// counts each message by messageId. It decodes only the ids, to stay cheap
// under the race detector.
type slowCollector struct {
	*httptest.Server
	mu   sync.Mutex
	seen map[string]int
}

func newSlowCollector(t *testing.T, delay time.Duration) *slowCollector {
	t.Helper()
	s := &slowCollector{seen: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Batch []struct {
				MessageId string `json:"messageId"`
			} `json:"batch"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		time.Sleep(delay)
		s.mu.Lock()
		for _, m := range body.Batch {
			s.seen[m.MessageId]++
		}
		s.mu.Unlock()
		_, _ = io.WriteString(w, `{"success":true}`)
	}))
	t.Cleanup(s.Close)
	return s
}

// assertExactlyOnce checks that the server received every id in sent once,
// and nothing else.
func (s *slowCollector) assertExactlyOnce(t *testing.T, sent []string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range sent {
		if n := s.seen[id]; n != 1 {
			t.Fatalf("message %s received %d times, want once", id, n)
		}
	}
	if len(s.seen) != len(sent) {
		t.Fatalf("server received %d distinct messages, %d were sent", len(s.seen), len(sent))
	}
}

// newDefaultClient returns a client with the default settings, except the
// endpoint and a captured logger.
func newDefaultClient(t *testing.T, endpoint string) (*Client, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	c := New(testKey)
	c.Endpoint = endpoint
	c.Logger.SetOutput(logs)
	return c, logs
}

func loadTrack(i int) *Track {
	return &Track{UserId: "user", Event: "Imported", Properties: map[string]interface{}{"i": i}}
}

// closeAndCheck closes c and checks that nothing was dropped or logged.
func closeAndCheck(t *testing.T, c *Client, logs *syncBuffer, calls int) {
	t.Helper()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if s := c.Stats(); s.Calls != int64(calls) || s.Sent != int64(calls) || s.Dropped != 0 || s.QueueDepth != 0 {
		t.Fatalf("stats after Close: %+v", s)
	}
	if out := logs.String(); out != "" {
		t.Fatalf("a lossless run logged:\n%s", out)
	}
}

func TestBurstOf50000CallsAtDefaultsIsDeliveredExactlyOnce(t *testing.T) {
	srv := newSlowCollector(t, 50*time.Millisecond)
	c, logs := newDefaultClient(t, srv.URL)
	const calls = 50000
	sent := make([]string, 0, calls)
	for i := range calls {
		m := loadTrack(i)
		if err := c.Track(m); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		sent = append(sent, m.MessageId)
	}
	closeAndCheck(t, c, logs, calls)
	srv.assertExactlyOnce(t, sent)
}

func TestSteadyLoadAtDefaultsIsDeliveredExactlyOnce(t *testing.T) {
	srv := newSlowCollector(t, 50*time.Millisecond)
	c, logs := newDefaultClient(t, srv.URL)
	// 4600 calls per second for 2 seconds, in ticks of 10 ms.
	const perTick, ticks = 46, 200
	sent := make([]string, 0, perTick*ticks)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for range ticks {
		<-tick.C
		for i := range perTick {
			m := loadTrack(i)
			if err := c.Track(m); err != nil {
				t.Fatalf("call %d: %v", len(sent), err)
			}
			sent = append(sent, m.MessageId)
		}
	}
	closeAndCheck(t, c, logs, len(sent))
	srv.assertExactlyOnce(t, sent)
}
