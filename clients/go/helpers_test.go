package analytics

import (
	"bytes"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/backo-go"
)

const testKey = "test-write-key"

// received is one request seen by a recorder.
type received struct {
	method, path string
	header       http.Header
	body         []byte
	status       int
}

// batchBody is the decoded shape of a batch request.
type batchBody struct {
	Batch     []map[string]interface{} `json:"batch"`
	Context   map[string]interface{}   `json:"context"`
	MessageId string                   `json:"messageId"`
	SentAt    string                   `json:"sentAt"`
}

func (r received) decode(t *testing.T) batchBody {
	t.Helper()
	var b batchBody
	if err := json.Unmarshal(r.body, &b); err != nil {
		t.Fatalf("batch body is not JSON: %v\n%s", err, r.body)
	}
	return b
}

// recorder is a local collection API that records every request. respond
// chooses the status of the nth request (0-based); nil means 200.
type recorder struct {
	*httptest.Server
	mu      sync.Mutex
	reqs    []received
	respond func(n int, w http.ResponseWriter) int
}

func newRecorder(t *testing.T, respond func(n int, w http.ResponseWriter) int) *recorder {
	t.Helper()
	r := &recorder{respond: respond}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	n := len(r.reqs)
	r.reqs = append(r.reqs, received{method: req.Method, path: req.URL.Path, header: req.Header.Clone(), body: body})
	r.mu.Unlock()
	status := http.StatusOK
	if r.respond != nil {
		status = r.respond(n, w)
	}
	r.mu.Lock()
	r.reqs[n].status = status
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if status == http.StatusOK {
		_, _ = io.WriteString(w, `{"success":true}`)
	} else {
		_, _ = io.WriteString(w, `{"success":false,"code":"test","message":"test failure"}`)
	}
}

func (r *recorder) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.reqs...)
}

// delivered returns every message of every request answered with 2xx.
func (r *recorder) delivered(t *testing.T) []map[string]interface{} {
	t.Helper()
	var out []map[string]interface{}
	for _, req := range r.requests() {
		if req.status >= 200 && req.status < 300 {
			out = append(out, req.decode(t).Batch...)
		}
	}
	return out
}

// newTestClient returns a client for endpoint with fast retries, a long
// interval (so only the behaviour under test flushes) and a log buffer. It
// is closed when the test ends.
func newTestClient(t *testing.T, endpoint string) (*Client, *syncBuffer) {
	t.Helper()
	buf := &syncBuffer{}
	c := New(testKey)
	c.Endpoint = endpoint
	c.Interval = time.Hour
	c.Logger = log.New(buf, "", 0)
	c.tune.backo = backo.NewBacko(time.Millisecond, 2, 0, 5*time.Millisecond)
	t.Cleanup(func() { _ = c.Close() })
	return c, buf
}

// eventually polls cond until it holds, failing the test after 10 seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// within runs f and fails the test if it does not return within 5 seconds,
// which would mean it blocked.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s blocked", what)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger writing from background
// goroutines while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// failures collects OnFailure reports.
type failures struct {
	mu    sync.Mutex
	errs  []error
	count int // messages reported
}

func (f *failures) record(err error, msgs []json.RawMessage) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, err)
	f.count += len(msgs)
}

func (f *failures) snapshot() ([]error, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]error(nil), f.errs...), f.count
}

func newTestLogger() *log.Logger { return log.New(io.Discard, "", 0) }
