package bench

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	sluice "github.com/sluice-dev/sluice/clients/go"
)

// noLibrary reports whether lib is one of the entries that measure the
// machine, not a library.
func noLibrary(lib library) bool { return lib.name == "floor" || lib.name == "json-only" }

// The outage scenario: the collection API is away (it answers 503, as a
// load balancer in front of a stopped server does) for outageLength while
// the application makes outageRate calls per second, then it comes back.
// Each library runs at its defaults. The figures are the caller's: how
// long each call took, and how many messages were lost once the server
// had returned and Close had flushed.
const (
	outageRate   = 5000
	outageLength = 10 * time.Second
	// deliverWithin bounds the wait for the backlog after the outage:
	// longer than a batch's whole retry schedule (about 33 to 50 s).
	deliverWithin = 60 * time.Second
)

// BenchmarkOutage runs the outage scenario once per library, whatever b.N
// says (run it with -benchtime 1x). When the server is back, the program
// goes on (as a server process would) until every message has arrived or
// deliverWithin has passed, then closes the client. Reported: the slowest
// call, the 99.9th and 99th percentiles, the calls refused with an error,
// the messages lost after Close, and how long after the server's return
// the backlog took to arrive (deliver-s).
//
// Two entries are no library: "floor" makes no call, and "json-only"
// only encodes the message with encoding/json, a few microseconds of CPU
// like a library's call. Their figures are what the machine (a thread
// descheduled by other processes, the garbage collector) adds to any
// call of that length, so a library's slowest call can be read against
// them.
func BenchmarkOutage(b *testing.B) {
	floor := library{"floor", func(*testing.B, string) (func() error, func() error) {
		return func() error { return nil }, func() error { return nil }
	}}
	jsonOnly := library{"json-only", func(*testing.B, string) (func() error, func() error) {
		return func() error {
			_, err := json.Marshal(&sluice.Track{UserId: "019mr8mf4r", Event: "Purchased Item", Properties: props})
			return err
		}, func() error { return nil }
	}}
	for _, lib := range append([]library{floor, jsonOnly}, libraries...) {
		b.Run(lib.name, func(b *testing.B) {
			srv := newCollector(b, 0)
			srv.down.Store(true)
			track, closeFn := lib.open(b, srv.URL)

			n := int(outageRate * outageLength / time.Second)
			took := make([]time.Duration, n)
			refused := 0
			interval := time.Second / outageRate
			b.ResetTimer()
			start := time.Now()
			for i := range n {
				if wait := time.Until(start.Add(time.Duration(i) * interval)); wait > 0 {
					time.Sleep(wait)
				}
				t0 := time.Now()
				err := track()
				took[i] = time.Since(t0)
				if err != nil {
					refused++
				}
			}
			if rest := time.Until(start.Add(outageLength)); rest > 0 {
				time.Sleep(rest)
			}
			srv.down.Store(false)
			back := time.Now()
			for srv.messages.Load() < int64(n) && !noLibrary(lib) && time.Since(back) < deliverWithin {
				time.Sleep(10 * time.Millisecond)
			}
			drain := time.Since(back)
			err := closeFn()
			b.StopTimer()
			if err != nil {
				b.Logf("Close: %v", err)
			}

			slices.Sort(took)
			pct := func(p float64) float64 { return float64(took[int(float64(n-1)*p)].Nanoseconds()) }
			b.ReportMetric(float64(took[n-1].Nanoseconds()), "max-ns/call")
			b.ReportMetric(pct(0.999), "p99.9-ns/call")
			b.ReportMetric(pct(0.99), "p99-ns/call")
			b.ReportMetric(float64(refused), "refused")
			if !noLibrary(lib) {
				b.ReportMetric(float64(int64(n)-srv.messages.Load()), "lost")
			}
			b.ReportMetric(drain.Seconds(), "deliver-s")
			b.ReportMetric(time.Since(start).Seconds(), "total-s")
		})
	}
}
