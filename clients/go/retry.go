package analytics

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/segmentio/backo-go"
)

// backoff returns the wait before retry number attempt (0 for the first
// retry). b sets the schedule: by default 100 ms doubling per attempt up to
// 10 s. The library then randomises the upper half of that wait ("equal
// jitter"), so waits never collapse to zero and clients that failed
// together spread out; b's own jitter, if configured, applies first.
func backoff(b *backo.Backo, attempt int) time.Duration {
	d := b.Duration(attempt)
	half := d / 2
	if half <= 0 {
		return max(d, 0)
	}
	return half + rand.N(half+1)
}

// retryable reports whether a response status is worth retrying: 429 and
// every 5xx. Other statuses are final.
func retryable(status int) bool {
	return status == http.StatusTooManyRequests || status >= 500
}

// retryAfter parses a Retry-After header, given in seconds or as an HTTP
// date, into a wait capped at limit. ok is false when the header is absent or
// unparsable.
func retryAfter(h string, now time.Time, limit time.Duration) (wait time.Duration, ok bool) {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(h, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		if secs > int64(limit/time.Second) {
			return limit, true
		}
		return time.Duration(secs) * time.Second, true
	}
	t, err := http.ParseTime(h)
	if err != nil {
		return 0, false
	}
	return min(max(t.Sub(now), 0), limit), true
}

// sleepContext waits for d, or until ctx is done.
func sleepContext(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
