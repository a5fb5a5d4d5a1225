package analytics

import (
	"encoding/json"
	"log"
	"math"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/segmentio/backo-go"
)

// Version is the version of analytics-go that this library stands in for. It
// is sent in the User-Agent header and in the batch context.
const Version = "2.1.0"

// Endpoint is the default base URL of the collection API: a Sluice server
// listening on its default local address.
const Endpoint = "http://localhost:8088"

// DefaultContext is the batch-level context sent with every batch. The server
// merges it into each message, whose own context keys win. A Client reads
// it once, when it starts (at its first call); changing it while clients
// start is a data race.
var DefaultContext = map[string]interface{}{
	"library": map[string]interface{}{
		"name":    "analytics-go",
		"version": Version,
	},
}

// Backo sets the waits between upload attempts, as in analytics-go v2: the
// wait before retry n (from 0) is Backo.Duration(n) plus a random extra of
// up to half of it, so no wait is shorter than v2's. The default waits
// 100 ms, doubling per attempt up to 10 s. Replace it, before creating
// clients, to tune retries:
//
//	analytics.Backo = backo.NewBacko(time.Second, 2, 0, time.Minute)
//
// A Client reads it once, when it starts; nil means the default.
var Backo = backo.DefaultBacko()

// Defaults and fixed limits.
const (
	defaultFlushAt    = 20
	defaultFlushAfter = 5 * time.Second
	// defaultMaxQueueBytes is the default byte budget of the buffer.
	// analytics-go v2 made its callers wait only once 1000 uploads of
	// Size (250) messages were in flight, 100 more sat in its channel and
	// a batch of 250 was filling: 250 350 messages. 128 MiB holds that
	// many messages of up to 536 bytes of JSON; a typical track call is
	// 200 to 400 bytes.
	defaultMaxQueueBytes = 128 << 20
	// defaultHTTPTimeout outlasts a Sluice server's own 10 s storage
	// timeout, so that its answer arrives before the client gives up.
	defaultHTTPTimeout = 30 * time.Second

	// maxMessageBytes is the largest accepted message, as JSON.
	maxMessageBytes = 32768
	// maxBatchBytes bounds a whole request body, envelope included.
	maxBatchBytes = 500000
	// maxBatchMessages is the server's limit of messages per batch.
	maxBatchMessages = 2500

	defaultMaxAttempts = 10
	// lossLogEvery is how often a kind of loss is summarised in the log.
	lossLogEvery = 10 * time.Second
	// defaultMaxRetryAfter caps a Retry-After header at analytics-go v2's
	// longest backoff.
	defaultMaxRetryAfter = 10 * time.Second
	defaultMaxUploads    = 8
)

// settings is the snapshot of a Client's configuration taken when it starts.
type settings struct {
	url          string
	key          string
	flushAt      int
	batchMax     int // messages per request: Size/FlushAt when set, else 2500
	flushAfter   time.Duration
	maxQueued    int // math.MaxInt unless MaxQueueSize is set
	maxBytes     int
	block        bool          // BlockWhenFull and not DropWhenFull
	closeTimeout time.Duration // 0: no deadline
	logger       *log.Logger
	verbose      bool
	http         *http.Client
	onFailure    func(error, []json.RawMessage)
	onSuccess    func([]json.RawMessage)
	gzip         bool
	contextJSON  []byte

	// tuning, with every zero knob replaced by its default.
	tuning
}

// flushCount resolves FlushAt and its synonym Size: a positive FlushAt wins,
// then a positive Size, then the default. A batch never holds more than the
// server's 2500 messages.
func flushCount(flushAt, size int) int {
	n := defaultFlushAt
	switch {
	case flushAt > 0:
		n = flushAt
	case size > 0:
		n = size
	}
	return min(n, maxBatchMessages)
}

// batchCap is the most messages one request carries. A FlushAt or Size
// set by the caller caps it, as Size did in analytics-go v2, for programs
// that count on small requests; at the defaults a backlog may go out in
// requests of up to 2500 messages (and 500 000 bytes), so delivery keeps
// up after an outage.
func batchCap(flushAt, size int) int {
	if flushAt > 0 || size > 0 {
		return flushCount(flushAt, size)
	}
	return maxBatchMessages
}

// flushInterval resolves FlushAfter and its synonym Interval the same way.
func flushInterval(flushAfter, interval time.Duration) time.Duration {
	switch {
	case flushAfter > 0:
		return flushAfter
	case interval > 0:
		return interval
	}
	return defaultFlushAfter
}

// debugEnabled reports whether the DEBUG environment value turns on this
// library's logging: "analytics" or "*", alone or in a comma- or
// space-separated list.
func debugEnabled(v string) bool {
	for _, f := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' }) {
		if f == "analytics" || f == "*" || f == "analytics*" || f == "analytics:*" {
			return true
		}
	}
	return false
}

func defaultLogger() *log.Logger {
	return log.New(os.Stderr, "analytics ", log.LstdFlags)
}

func positive[T int | time.Duration](v, def T) T {
	if v > 0 {
		return v
	}
	return def
}

// settings resolves the exported fields and the tuning knobs.
func (c *Client) settings() settings {
	endpoint := c.Endpoint
	if endpoint == "" {
		endpoint = Endpoint
	}
	logger := c.Logger
	if logger == nil {
		logger = defaultLogger()
	}
	hc := c.Client
	if hc.Timeout <= 0 {
		hc.Timeout = defaultHTTPTimeout
	}
	ctxJSON, err := json.Marshal(DefaultContext)
	if err != nil {
		ctxJSON = []byte(`{"library":{"name":"analytics-go","version":"` + Version + `"}}`)
	}
	t := c.tune
	t.maxAttempts = positive(t.maxAttempts, positive(c.MaxAttempts, defaultMaxAttempts))
	if t.backo == nil {
		t.backo = c.Backo
	}
	if t.backo == nil {
		t.backo = Backo
	}
	if t.backo == nil {
		t.backo = backo.DefaultBacko()
	}
	t.maxRetryAfter = positive(t.maxRetryAfter, defaultMaxRetryAfter)
	t.maxUploads = positive(t.maxUploads, defaultMaxUploads)
	t.maxBatchBytes = positive(t.maxBatchBytes, maxBatchBytes)
	t.lossLogEvery = positive(t.lossLogEvery, lossLogEvery)
	if t.now == nil {
		t.now = time.Now
	}
	if t.uid == nil {
		t.uid = newUUID
	}
	if t.sleep == nil {
		t.sleep = sleepContext
	}
	s := settings{
		url:          strings.TrimRight(endpoint, "/") + "/v1/batch",
		key:          c.key,
		flushAt:      flushCount(c.FlushAt, c.Size),
		batchMax:     batchCap(c.FlushAt, c.Size),
		flushAfter:   flushInterval(c.FlushAfter, c.Interval),
		maxQueued:    positive(c.MaxQueueSize, math.MaxInt),
		maxBytes:     positive(c.MaxQueueBytes, defaultMaxQueueBytes),
		block:        c.BlockWhenFull && !c.DropWhenFull,
		closeTimeout: max(c.CloseTimeout, 0),
		logger:       logger,
		verbose:      c.Verbose || debugEnabled(os.Getenv("DEBUG")),
		http:         &hc,
		onFailure:    c.OnFailure,
		onSuccess:    c.OnSuccess,
		gzip:         c.Gzip,
		contextJSON:  ctxJSON,
		tuning:       t,
	}
	return s
}
