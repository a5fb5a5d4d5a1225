package bench

import (
	"bytes"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	segment "github.com/segmentio/analytics-go/v3"
	sluice "github.com/sluice-dev/sluice/clients/go"
)

// Both libraries run at their DEFAULT settings: only the endpoint is set,
// and the logger silenced. Nothing here raises a queue limit or tunes the
// batch size, so the figures are what a user who changes nothing gets.

// delays are the collector's answer times: a local server (0 ms) and one a
// network round trip away (50 ms).
var delays = []time.Duration{0, 50 * time.Millisecond}

// collector is a local collection API that answers after delay and counts
// the messages it receives. To cost both libraries little and the same, it
// does not parse JSON: it counts the "messageId" keys in the body, less the
// batch's own (both libraries give every message and the batch one).
type collector struct {
	*httptest.Server
	messages atomic.Int64
	requests atomic.Int64
	// down makes it answer 503, as a load balancer in front of a stopped
	// server does (the outage benchmark).
	down atomic.Bool
}

var bodies = sync.Pool{New: func() interface{} { return new(bytes.Buffer) }}

var messageIdKey = []byte(`"messageId":`)

func newCollector(b *testing.B, delay time.Duration) *collector {
	c := &collector{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.down.Load() {
			_, _ = io.Copy(io.Discard, r.Body)
			http.Error(w, `{"success":false,"code":"unavailable","message":"away"}`, http.StatusServiceUnavailable)
			return
		}
		buf := bodies.Get().(*bytes.Buffer)
		buf.Reset()
		defer bodies.Put(buf)
		if _, err := buf.ReadFrom(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		n := bytes.Count(buf.Bytes(), messageIdKey) - 1
		if n < 1 {
			http.Error(w, "no messages", http.StatusBadRequest)
			return
		}
		if delay > 0 {
			time.Sleep(delay)
		}
		c.messages.Add(int64(n))
		c.requests.Add(1)
		_, _ = io.WriteString(w, `{"success":true}`)
	}))
	b.Cleanup(c.Close)
	return c
}

// library abstracts the two clients under test.
type library struct {
	name string
	// open returns a track function and a close function.
	open func(b *testing.B, endpoint string) (track func() error, closeFn func() error)
}

var props = map[string]interface{}{"plan": "premium", "revenue": 39.95, "items": 3}

var libraries = []library{
	{"sluice", func(b *testing.B, endpoint string) (func() error, func() error) {
		c := sluice.New("bench-key")
		c.Endpoint = endpoint
		c.Logger = log.New(io.Discard, "", 0)
		return func() error {
				return c.Track(&sluice.Track{UserId: "019mr8mf4r", Event: "Purchased Item", Properties: props})
			}, func() error {
				err := c.Close()
				// Calls that found the queue full and waited (back-pressure).
				b.ReportMetric(float64(c.Stats().Waited)/float64(b.N), "waited/op")
				return err
			}
	}},
	{"segment-v3", func(b *testing.B, endpoint string) (func() error, func() error) {
		c, err := segment.NewWithConfig("bench-key", segment.Config{
			Endpoint: endpoint,
			Logger:   segment.StdLogger(log.New(io.Discard, "", 0)),
		})
		if err != nil {
			b.Fatal(err)
		}
		return func() error {
			return c.Enqueue(segment.Track{UserId: "019mr8mf4r", Event: "Purchased Item", Properties: props})
		}, c.Close
	}},
}

// forEach runs fn for every collector delay and library, in that order, so
// the two libraries run next to each other under the same conditions.
func forEach(b *testing.B, fn func(b *testing.B, lib library, srv *collector)) {
	for _, delay := range delays {
		b.Run(delay.String(), func(b *testing.B) {
			for _, lib := range libraries {
				b.Run(lib.name, func(b *testing.B) {
					fn(b, lib, newCollector(b, delay))
				})
			}
		})
	}
}

// closeAndCount closes the client and checks that the collector received
// every one of the n messages.
func closeAndCount(b *testing.B, srv *collector, closeFn func() error, n int) {
	if err := closeFn(); err != nil {
		b.Fatal(err)
	}
	if got := srv.messages.Load(); got != int64(n) {
		b.Fatalf("server received %d of %d messages", got, n)
	}
	if reqs := srv.requests.Load(); reqs > 0 {
		b.ReportMetric(float64(n)/float64(reqs), "msgs/req")
	}
}

// BenchmarkEnqueue measures the caller's cost of one Track call: time and
// allocations per call (background uploads included), with uploads running
// in the background. A call that finds the queue full waits, so when the
// collector is slower than the caller this measures delivery, too.
func BenchmarkEnqueue(b *testing.B) {
	forEach(b, func(b *testing.B, lib library, srv *collector) {
		track, closeFn := lib.open(b, srv.URL)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := track(); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		closeAndCount(b, srv, closeFn, b.N)
	})
}

// BenchmarkEnqueueParallel is BenchmarkEnqueue with callers on every CPU.
func BenchmarkEnqueueParallel(b *testing.B) {
	forEach(b, func(b *testing.B, lib library, srv *collector) {
		track, closeFn := lib.open(b, srv.URL)
		var n atomic.Int64
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := track(); err != nil {
					b.Error(err)
					return
				}
				n.Add(1)
			}
		})
		b.StopTimer()
		closeAndCount(b, srv, closeFn, int(n.Load()))
	})
}

// BenchmarkFlush measures end-to-end throughput: create a client, make b.N
// calls, Close (which returns once every batch has been uploaded). msgs/s
// is b.N over that whole time; the collector must have received them all.
func BenchmarkFlush(b *testing.B) {
	forEach(b, func(b *testing.B, lib library, srv *collector) {
		b.ReportAllocs()
		b.ResetTimer()
		start := time.Now()
		track, closeFn := lib.open(b, srv.URL)
		for i := 0; i < b.N; i++ {
			if err := track(); err != nil {
				b.Fatal(err)
			}
		}
		closeAndCount(b, srv, closeFn, b.N)
		elapsed := time.Since(start)
		b.StopTimer()
		b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
	})
}
