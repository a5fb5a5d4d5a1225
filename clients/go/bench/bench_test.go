package bench

import (
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	segment "github.com/segmentio/analytics-go/v3"
	sluice "github.com/sluice-dev/sluice/clients/go"
)

// batchSize is the same for both libraries, so that they make the same
// number of requests.
const batchSize = 100

// collector is a local collection API that counts the messages it receives.
type collector struct {
	*httptest.Server
	messages atomic.Int64
}

func newCollector(b *testing.B) *collector {
	c := &collector{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Batch []json.RawMessage `json:"batch"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.messages.Add(int64(len(body.Batch)))
		_, _ = io.WriteString(w, `{"success":true}`)
	}))
	b.Cleanup(c.Close)
	return c
}

// library abstracts the two clients under test.
type library struct {
	name string
	// open returns a track function and a close function.
	open func(b *testing.B, endpoint string) (track func(i int) error, closeFn func() error)
}

var props = map[string]interface{}{"plan": "premium", "revenue": 39.95, "items": 3}

var libraries = []library{
	{"sluice", func(b *testing.B, endpoint string) (func(int) error, func() error) {
		c := sluice.New("bench-key")
		c.Endpoint = endpoint
		c.Size = batchSize
		c.MaxQueueSize = 1 << 20
		c.Logger = log.New(io.Discard, "", 0)
		return func(int) error {
			return c.Track(&sluice.Track{UserId: "019mr8mf4r", Event: "Purchased Item", Properties: props})
		}, c.Close
	}},
	{"segment-v3", func(b *testing.B, endpoint string) (func(int) error, func() error) {
		c, err := segment.NewWithConfig("bench-key", segment.Config{
			Endpoint:  endpoint,
			BatchSize: batchSize,
			Logger:    segment.StdLogger(log.New(io.Discard, "", 0)),
		})
		if err != nil {
			b.Fatal(err)
		}
		return func(int) error {
			return c.Enqueue(segment.Track{UserId: "019mr8mf4r", Event: "Purchased Item", Properties: props})
		}, c.Close
	}},
}

// BenchmarkEnqueue measures the caller's cost of one Track call: time and
// allocations per call, with uploads running in the background.
func BenchmarkEnqueue(b *testing.B) {
	for _, lib := range libraries {
		b.Run(lib.name, func(b *testing.B) {
			srv := newCollector(b)
			track, closeFn := lib.open(b, srv.URL)
			rejected := 0
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := track(i); err != nil {
					if !errors.Is(err, sluice.ErrQueueFull) {
						b.Fatal(err)
					}
					rejected++
				}
			}
			b.StopTimer()
			if err := closeFn(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(rejected)/float64(b.N), "rejected/op")
		})
	}
}

// BenchmarkEnqueueParallel is BenchmarkEnqueue with callers on every CPU.
func BenchmarkEnqueueParallel(b *testing.B) {
	for _, lib := range libraries {
		b.Run(lib.name, func(b *testing.B) {
			srv := newCollector(b)
			track, closeFn := lib.open(b, srv.URL)
			var rejected atomic.Int64
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := track(0); err != nil {
						if !errors.Is(err, sluice.ErrQueueFull) {
							b.Error(err)
							return
						}
						rejected.Add(1)
					}
				}
			})
			b.StopTimer()
			if err := closeFn(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(rejected.Load())/float64(b.N), "rejected/op")
		})
	}
}

// BenchmarkFlush measures end-to-end throughput: b.N calls, then Close,
// which returns once every batch has been uploaded to the local server. The
// server must have received every message.
func BenchmarkFlush(b *testing.B) {
	for _, lib := range libraries {
		b.Run(lib.name, func(b *testing.B) {
			srv := newCollector(b)
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			track, closeFn := lib.open(b, srv.URL)
			for i := 0; i < b.N; i++ {
				if err := track(i); err != nil {
					b.Fatal(err)
				}
			}
			if err := closeFn(); err != nil {
				b.Fatal(err)
			}
			elapsed := time.Since(start)
			b.StopTimer()
			if got := srv.messages.Load(); got != int64(b.N) {
				b.Fatalf("server received %d of %d messages", got, b.N)
			}
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
		})
	}
}
