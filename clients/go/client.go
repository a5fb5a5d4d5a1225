package analytics

import (
	"context"
	"encoding/json"
	"log"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/segmentio/backo-go"
)

// Client queues messages in memory and uploads them in batches from a
// background goroutine. Create one with New, set its exported fields before
// the first call, use it from any number of goroutines, and Close it before
// the program exits.
//
// The settings are read once, at the first call or Close; changing them
// afterwards has no effect and is a data race. A zero Client is usable and
// behaves like New("") (an empty write key). As with analytics-go v2, a
// Client copied by value after its first call shares the original's queue
// and background goroutine: calls through either copy are delivered, and
// closing either closes both.
type Client struct {
	// Endpoint is the base URL of the Sluice collection API; batches are
	// posted to Endpoint + "/v1/batch". New sets it to the package constant
	// Endpoint, http://localhost:8088; an empty Endpoint means the same.
	Endpoint string

	// Interval is the longest time a message waits in the queue: a batch is
	// flushed when Interval has passed since the last flush. It is a synonym
	// of FlushAfter, which wins when both are positive. Zero or negative
	// means the default, 5 seconds.
	Interval time.Duration

	// Size is the number of queued messages that starts a flush, and, when
	// set, the most messages one request carries, as in analytics-go v2. It
	// is a synonym of FlushAt, which wins when both are positive. Zero or
	// negative, as New leaves it, means the default: a flush starts at 20
	// messages, and a backlog (after an outage, or while uploads are slow)
	// may go out in requests of up to 2500 messages and 500 000 bytes, so
	// delivery catches up. 1 uploads every call on its own.
	Size int

	// Logger receives a line whenever messages are lost, whatever Verbose
	// says: the first loss of each kind (a call refused as invalid, too
	// large, with the buffer full or after Close, or a batch that could not
	// be delivered) at once, then one summary line with counts per kind
	// every 10 seconds while losses continue. With Verbose or
	// DEBUG=analytics it also receives every refused call and batching and
	// upload activity. New sets it to a logger on standard error with the
	// prefix "analytics "; nil means the same. Write keys are never logged.
	Logger *log.Logger

	// Verbose turns on logging of each refused call and of batching and
	// upload activity, as does the environment variable DEBUG=analytics.
	// The zero value logs losses only, rate-limited (see Logger).
	Verbose bool

	// Client is the HTTP client used for uploads. New sets it to a client
	// with a 30-second Timeout; a zero Timeout is replaced by 30 seconds,
	// which leaves room for a Sluice server's own 10-second storage
	// timeout, so a slow answer is not mistaken for a failure and sent
	// twice.
	Client http.Client

	// FlushAt is another name for Size. When positive it takes precedence
	// over Size. The zero value defers to Size.
	FlushAt int

	// FlushAfter is another name for Interval. When positive it takes
	// precedence over Interval. The zero value defers to Interval.
	FlushAfter time.Duration

	// MaxQueueSize, when positive, bounds the number of messages the
	// Client holds in memory (waiting to be batched, or in a batch being
	// uploaded or retried), besides MaxQueueBytes. The zero value sets no
	// count: only the byte budget applies.
	MaxQueueSize int

	// DropWhenFull is kept for programs written for earlier releases of
	// this library, when a call waited for room by default. A call now
	// returns ErrQueueFull at once when the buffer is full unless
	// BlockWhenFull is set; DropWhenFull wins over BlockWhenFull.
	DropWhenFull bool

	// CloseTimeout, when positive, bounds how long Close waits for the
	// final uploads, and, with BlockWhenFull, how long a call waits for
	// room in a full buffer. When it passes during Close, uploads are
	// abandoned and the undelivered messages are reported as failures.
	// Zero or negative, the default, means no deadline, as in
	// analytics-go v2: Close returns when every message has been delivered
	// or has failed its retries, which the retry schedule (about 33 to 50
	// seconds of waits at most by default) and the HTTP client's Timeout
	// bound.
	CloseTimeout time.Duration

	// OnFailure, when not nil, is called with every message that will not
	// be delivered, and the error that ended it: a batch that could not be
	// delivered (after retries, on a status that is not retried, or when
	// Close times out), and a message a call refused (invalid, ErrTooLarge,
	// ErrQueueFull, ErrClosed). Each element of msgs is one message's JSON
	// encoding. It is called from the background goroutines or from the
	// refused call's goroutine, possibly concurrently, and should return
	// promptly. The zero value only logs and counts failures.
	//
	// Delivery is at least once, so failures are reported conservatively:
	// a batch whose request was in flight when it failed (a timeout, a
	// lost connection, or Close giving up) may have been stored by the
	// server all the same.
	OnFailure func(err error, msgs []json.RawMessage)

	// MaxQueueBytes is the buffer's byte budget: the JSON of every message
	// held (waiting, being uploaded or waiting to retry) counts against
	// it. A call that would pass it is refused with ErrQueueFull, counted,
	// logged and reported to OnFailure, and never waits, unless
	// BlockWhenFull is set. Zero or negative means the default, 128 MiB,
	// which holds 250 350 messages of up to 536 bytes: what analytics-go
	// v2 held before its calls started to wait (1000 uploads of 250
	// messages, its 100-message channel and a batch being filled). So an
	// outage of the server costs the application memory, not time.
	MaxQueueBytes int

	// BlockWhenFull makes a call on a full buffer wait for room instead of
	// returning ErrQueueFull: until an upload ends (delivered or given
	// up) and frees room, until a positive CloseTimeout passes
	// (ErrQueueFull) or until Close gives up (ErrClosed). It suits
	// programs that prefer back-pressure to loss; the calls then wait on
	// the network while the server is away. The zero value never waits.
	BlockWhenFull bool

	// OnSuccess, when not nil, is called with the messages of every batch
	// the server accepted, each element one message's JSON encoding. It
	// is called from the upload goroutines, possibly concurrently, and
	// should return promptly.
	OnSuccess func(msgs []json.RawMessage)

	// Gzip compresses request bodies with gzip (Content-Encoding: gzip),
	// which a Sluice server accepts: a batch of similar messages shrinks
	// several times, at some CPU cost in the upload goroutines, never in
	// the calls. The zero value sends plain JSON, as analytics-go v2 did.
	Gzip bool

	// Backo, when not nil, sets this Client's waits between upload
	// attempts instead of the package variable Backo.
	Backo *backo.Backo

	// MaxAttempts, when positive, is how many times this Client sends a
	// batch that fails with a status worth retrying, the first time
	// included. The zero value means 10, as in analytics-go v2.
	MaxAttempts int

	key  string
	tune tuning

	// rt is the running client, created at the first call or Close. Every
	// piece of mutable state lives behind this one pointer, so that copies
	// of the Client made afterwards share it.
	rt atomic.Pointer[core]
}

// tuning holds unexported knobs, mostly for tests. Zero values mean defaults.
type tuning struct {
	now           func() time.Time
	uid           func() string
	sleep         func(ctx context.Context, d time.Duration) error
	backo         *backo.Backo // nil: the package variable Backo
	maxAttempts   int
	maxRetryAfter time.Duration
	maxUploads    int
	maxBatchBytes int
	lossLogEvery  time.Duration
}

// New returns a Client that sends to Endpoint with the given write key, with
// the default settings. Its background goroutine starts at the first call.
func New(key string) *Client {
	return &Client{
		Endpoint: Endpoint,
		Interval: defaultFlushAfter,
		Logger:   defaultLogger(),
		Client:   http.Client{Timeout: defaultHTTPTimeout},
		key:      key,
	}
}

// Identify queues an identify message. It returns an error, and queues
// nothing, when neither UserId nor AnonymousId is set, a caller-set
// MessageId or Timestamp would be refused by the server, the message is too
// large, the buffer is full or the Client is closed.
func (c *Client) Identify(msg *Identify) error {
	return c.core().enqueue(msg, &msg.Message, "identify", validateIdentify(msg))
}

// Track queues a track message. It returns an error, and queues nothing,
// when Event is empty, neither UserId nor AnonymousId is set, a caller-set
// MessageId or Timestamp would be refused by the server, the message is too
// large, the buffer is full or the Client is closed.
func (c *Client) Track(msg *Track) error {
	return c.core().enqueue(msg, &msg.Message, "track", validateTrack(msg))
}

// Page queues a page message. It returns an error, and queues nothing, when
// neither UserId nor AnonymousId is set, a caller-set MessageId or Timestamp
// would be refused by the server, the message is too large, the buffer is
// full or the Client is closed.
func (c *Client) Page(msg *Page) error {
	return c.core().enqueue(msg, &msg.Message, "page", validatePage(msg))
}

// Group queues a group message. It returns an error, and queues nothing,
// when GroupId is empty, neither UserId nor AnonymousId is set, a caller-set
// MessageId or Timestamp would be refused by the server, the message is too
// large, the buffer is full or the Client is closed.
func (c *Client) Group(msg *Group) error {
	return c.core().enqueue(msg, &msg.Message, "group", validateGroup(msg))
}

// Alias queues an alias message. It returns an error, and queues nothing,
// when UserId or PreviousId is empty, a caller-set MessageId or Timestamp
// would be refused by the server, the message is too large, the buffer is
// full or the Client is closed.
func (c *Client) Alias(msg *Alias) error {
	return c.core().enqueue(msg, &msg.Message, "alias", validateAlias(msg))
}

// Close flushes every queued message and waits until each has been
// delivered or has failed its retries; with a positive CloseTimeout it
// waits at most that long, then abandons the rest. It may be called from
// any goroutine, concurrently with calls; calls already waiting for room
// (BlockWhenFull) are still admitted. Calls made after Close return ErrClosed.
//
// Close returns nil when every message it flushed or waited for was
// delivered. It returns an error, counting them and naming the last
// failure, when messages failed (a status that is not retried, retries
// exhausted) or were abandoned (CloseTimeout) after Close began; each was
// also logged and passed to OnFailure. Every later Close waits until the
// first has finished, then returns ErrClosed, so a program that closes the
// Client in two places exits only after the flush.
func (c *Client) Close() error {
	return c.core().close()
}

// core returns the running client, creating and starting it on first use.
// Concurrent first uses race to install theirs; only the winner starts its
// goroutine, and the others use the winner's.
func (c *Client) core() *core {
	if k := c.rt.Load(); k != nil {
		return k
	}
	k := newCore(c.settings())
	if !c.rt.CompareAndSwap(nil, k) {
		return c.rt.Load()
	}
	go k.loop()
	return k
}
