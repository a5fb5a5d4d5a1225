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
// 10 s, as in analytics-go v2. The library adds a random extra of up to
// half of that wait, so clients that failed together spread out while no
// wait is shorter than v2's: ten attempts span at least v2's 32.7 s. b's
// own jitter, if configured, applies first.
func backoff(b *backo.Backo, attempt int) time.Duration {
	d := b.Duration(attempt)
	if d <= 0 {
		return 0
	}
	return d + rand.N(d/2+1)
}

// retryable reports whether a response status is worth retrying: 408
// (RFC 9110 lets a client repeat the request; Sluice answers it when a body
// arrives too slowly), 429 and every 5xx. Other statuses are final.
func retryable(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500
}

// splittable reports whether a status refusing a batch of several messages
// may be due to one of them, or to their number: 400 (a message the server
// refused) and 413 (too large). The batch is then sent again in halves.
// 401 and 403 (a bad write key) refuse every message alike.
func splittable(status int) bool {
	return status == http.StatusBadRequest || status == http.StatusRequestEntityTooLarge
}

// retryAfter parses a Retry-After header, given in seconds or as an HTTP
// date, into a wait capped at limit. ok is false when the header is absent or
// unparsable. The caller waits at least the backoff all the same: a server
// asking for less (0, a date in the past) does not shorten the schedule.
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
