package analytics

import (
	"net/http"
	"testing"
	"time"

	"github.com/segmentio/backo-go"
)

// The wait before a retry is the longer of the backoff and Retry-After
// (capped at 10 s): a server asking for 0, a date in the past or less than
// the backoff does not shorten the schedule, or ten attempts would burn in
// milliseconds.
func TestHonoursRetryAfterButNeverWaitsLessThanTheBackoff(t *testing.T) {
	date := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	cases := []struct {
		header   string
		min, max time.Duration
	}{
		{"7", 7 * time.Second, 7 * time.Second},
		{"1", time.Second, time.Second},
		{"0", 100 * ms, 150 * ms}, // the backoff
		{"soon", 100 * ms, 150 * ms},
		{date.Add(-time.Hour).Format(http.TimeFormat), 100 * ms, 150 * ms},
		{date.Add(9 * time.Second).Format(http.TimeFormat), 9 * time.Second, 9 * time.Second},
		{date.Add(90 * time.Second).Format(http.TimeFormat), 10 * time.Second, 10 * time.Second}, // capped
		{"100000", 10 * time.Second, 10 * time.Second},                                           // capped
	}
	for _, tc := range cases {
		t.Run(tc.header, func(t *testing.T) {
			srv := newRecorder(t, func(n int, w http.ResponseWriter) int {
				if n == 0 {
					w.Header().Set("Retry-After", tc.header)
					return 429
				}
				return 200
			})
			c, _ := newTestClient(t, srv.URL)
			var s sleeps
			c.tune.sleep = s.sleep
			c.tune.now = func() time.Time { return date }
			c.tune.backo = backo.NewBacko(100*ms, 2, 0, 10*time.Second)
			if err := c.Track(&Track{UserId: "u", Event: "e"}); err != nil {
				t.Fatal(err)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if got := s.all(); len(got) != 1 || got[0] < tc.min || got[0] > tc.max {
				t.Fatalf("waited %v, want one wait within [%v, %v]", got, tc.min, tc.max)
			}
			if n := len(srv.delivered(t)); n != 1 {
				t.Fatalf("delivered %d", n)
			}
		})
	}
}

// A Retry-After shorter than a later attempt's backoff gives way to it.
func TestRetryAfterShorterThanTheBackoffGivesWay(t *testing.T) {
	srv := newRecorder(t, func(n int, w http.ResponseWriter) int {
		if n < 6 {
			w.Header().Set("Retry-After", "1")
			return 503
		}
		return 200
	})
	c, _ := newTestClient(t, srv.URL)
	var s sleeps
	c.tune.sleep = s.sleep
	c.tune.backo = backo.NewBacko(100*time.Millisecond, 2, 0, 10*time.Second)
	if err := c.Track(&Track{UserId: "u", Event: "e"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	s1, ms := time.Second, time.Millisecond
	floors := []time.Duration{s1, s1, s1, s1, 1600 * ms, 3200 * ms}
	got := s.all()
	if len(got) != len(floors) {
		t.Fatalf("waited %v, want %d waits", got, len(floors))
	}
	for i, d := range got {
		if d < floors[i] {
			t.Errorf("wait %d = %v, want at least %v", i, d, floors[i])
		}
	}
}

func TestRetryAfterParsing(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, h := range []string{"", "soon", "-3"} {
		if _, ok := retryAfter(h, now, time.Minute); ok {
			t.Errorf("%q parsed", h)
		}
	}
	if d, ok := retryAfter(now.Add(-time.Hour).Format(http.TimeFormat), now, time.Minute); !ok || d != 0 {
		t.Errorf("past date: %v %v", d, ok)
	}
}
