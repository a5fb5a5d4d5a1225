package analytics

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"sync"
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
// behaves like New("") (an empty write key).
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

	// Size is the number of queued messages that starts a flush. It is a
	// synonym of FlushAt, which wins when both are positive. Zero or negative
	// means the default, 20; 1 uploads every call immediately when an upload
	// slot is free. It is not a cap: a flush takes every waiting message
	// that fits in one request (500 000 bytes, 2500 messages), so batches
	// grow when messages arrive faster than uploads finish.
	Size int

	// Logger receives a line for every dropped message or batch (whatever
	// Verbose says), and with Verbose or DEBUG=analytics,
	// batching and upload activity. New sets it to a logger on standard
	// error with the prefix "analytics "; nil means the same. Write keys are
	// never logged.
	Logger *log.Logger

	// Verbose turns on logging of batching and upload activity, as does the
	// environment variable DEBUG=analytics. The zero value logs only
	// failures.
	Verbose bool

	// Client is the HTTP client used for uploads. New sets it to a client
	// with a 10-second Timeout; a zero Timeout is replaced by 10 seconds.
	Client http.Client

	// FlushAt is the seed name of Size. When positive it takes precedence
	// over Size. The zero value defers to Size.
	FlushAt int

	// FlushAfter is the seed name of Interval. When positive it takes
	// precedence over Interval. The zero value defers to Interval.
	FlushAfter time.Duration

	// MaxQueueSize bounds the number of messages the Client holds in memory:
	// waiting to be batched, or in a batch being uploaded or retried. A call
	// made when it is reached waits for room (see DropWhenFull). Zero or
	// negative means the default, 10000. Each message is at most 32768
	// bytes of JSON, so the messages held take at most MaxQueueSize × 32 KB
	// (about 3 MB for 10000 messages of 300 bytes).
	MaxQueueSize int

	// DropWhenFull makes a call made while MaxQueueSize messages are held
	// return ErrQueueFull at once, dropping its message, instead of waiting
	// for room. The zero value waits: the call blocks until an upload frees
	// room, for at most CloseTimeout, and only then drops the message with
	// ErrQueueFull. Either way the drop is logged, counted in Stats and
	// reported to OnFailure.
	DropWhenFull bool

	// CloseTimeout bounds how long Close waits for the final uploads, and
	// how long a call waits for room in a full queue. When it passes during
	// Close, uploads are abandoned and the undelivered messages are reported
	// as failures. Zero or negative means the default, 10 seconds.
	CloseTimeout time.Duration

	// OnFailure, when not nil, is called with every message that will not
	// be delivered, and the error that ended it: a batch that could not be
	// delivered (after retries, on a status that is not retried, or when
	// Close times out), and a message a call refused (invalid, ErrTooLarge,
	// ErrQueueFull, ErrClosed). Each element of msgs is one message's JSON
	// encoding. It is called from the background goroutines or from the
	// refused call's goroutine, possibly concurrently, and should return
	// promptly. The zero value only logs and counts failures.
	OnFailure func(err error, msgs []json.RawMessage)

	key  string
	tune tuning

	startOnce sync.Once
	cfg       settings
	closing   atomic.Bool
	q         queue

	stats     counters
	abandoned atomic.Int64 // messages given up when Close timed out
	ctx       context.Context
	cancel    context.CancelFunc
	finished  chan struct{} // an upload ended
	done      chan struct{} // the loop returned
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
}

// New returns a Client that sends to Endpoint with the given write key, with
// the default settings. Its background goroutine starts at the first call.
func New(key string) *Client {
	return &Client{
		Endpoint: Endpoint,
		Interval: defaultFlushAfter,
		Size:     defaultFlushAt,
		Logger:   defaultLogger(),
		Client:   http.Client{Timeout: defaultHTTPTimeout},
		key:      key,
	}
}

// Identify queues an identify message. It returns an error, and queues
// nothing, when neither UserId nor AnonymousId is set, the message is too
// large, the queue stays full or the Client is closed.
func (c *Client) Identify(msg *Identify) error {
	return c.enqueue(msg, &msg.Message, "identify", validateIdentify(msg))
}

// Track queues a track message. It returns an error, and queues nothing,
// when Event is empty, neither UserId nor AnonymousId is set, the message is
// too large, the queue stays full or the Client is closed.
func (c *Client) Track(msg *Track) error {
	return c.enqueue(msg, &msg.Message, "track", validateTrack(msg))
}

// Page queues a page message. It returns an error, and queues nothing, when
// neither UserId nor AnonymousId is set, the message is too large, the queue
// stays full or the Client is closed.
func (c *Client) Page(msg *Page) error {
	return c.enqueue(msg, &msg.Message, "page", validatePage(msg))
}

// Group queues a group message. It returns an error, and queues nothing,
// when GroupId is empty, neither UserId nor AnonymousId is set, the message
// is too large, the queue stays full or the Client is closed.
func (c *Client) Group(msg *Group) error {
	return c.enqueue(msg, &msg.Message, "group", validateGroup(msg))
}

// Alias queues an alias message. It returns an error, and queues nothing,
// when UserId or PreviousId is empty, the message is too large, the queue
// stays full or the Client is closed.
func (c *Client) Alias(msg *Alias) error {
	return c.enqueue(msg, &msg.Message, "alias", validateAlias(msg))
}

// enqueue completes, encodes and queues a message that passed (invalid ==
// nil) or failed validation. When MaxQueueSize messages are held it waits
// for room, unless DropWhenFull is set. Every message it does not queue is
// dropped through reject.
func (c *Client) enqueue(v interface{}, m *Message, typ string, invalid error) error {
	c.startOnce.Do(c.start)
	c.stats.calls.Add(1)
	if invalid != nil {
		return c.reject(invalid, typ, m.MessageId, c.encodeForReport(v))
	}
	if c.closing.Load() {
		return c.reject(ErrClosed, typ, m.MessageId, c.encodeForReport(v))
	}
	m.fill(typ, c.cfg.uid, c.cfg.now)
	data, err := encodeMessage(v)
	if err != nil {
		return c.reject(fmt.Errorf("analytics: encoding %s message: %w", typ, err), typ, m.MessageId, nil)
	}
	if len(data) > maxMessageBytes {
		err := fmt.Errorf("%w: %d bytes of JSON, the limit is %d", ErrTooLarge, len(data), maxMessageBytes)
		return c.reject(err, typ, m.MessageId, data)
	}
	n, err := c.q.push(data, !c.cfg.dropWhenFull, c.cfg.closeTimeout, c.ctx.Done(), &c.stats.waited)
	if err != nil {
		return c.reject(err, typ, m.MessageId, data)
	}
	if c.cfg.verbose {
		c.verbosef("buffered message (%d/%d, %d bytes)", n, c.cfg.flushAt, len(data))
	}
	return nil
}

// Close flushes every queued message and waits for uploads in flight, for at
// most CloseTimeout. It may be called from any goroutine, concurrently with
// calls; calls already waiting for room in a full queue are still admitted
// until then. It returns nil when everything was handed to the server
// (deliveries that failed are reported through Logger and OnFailure), and an
// error when the timeout passed and messages were abandoned. Calls made after
// Close return ErrClosed; a second Close returns ErrClosed at once.
func (c *Client) Close() error {
	if !c.closing.CompareAndSwap(false, true) {
		return ErrClosed
	}
	c.startOnce.Do(c.start)
	defer c.cancel()
	c.q.close()

	timer := time.NewTimer(c.cfg.closeTimeout)
	defer timer.Stop()
	select {
	case <-c.done:
		return nil
	case <-timer.C:
	}
	c.cancel()
	<-c.done
	err := fmt.Errorf("analytics: Close timed out after %v; %d undelivered messages were dropped",
		c.cfg.closeTimeout, c.abandoned.Load())
	c.logf("%v", err)
	return err
}

// start snapshots the settings and starts the background goroutine.
func (c *Client) start() {
	c.cfg = c.settings()
	limit := c.cfg.maxBatchBytes - envelopeBytes(len(c.cfg.contextJSON)) - envelopeSlack
	c.q.init(c.cfg.maxQueued, c.cfg.flushAt, limit)
	c.finished = make(chan struct{}, c.cfg.maxUploads)
	c.done = make(chan struct{})
	c.ctx, c.cancel = context.WithCancel(context.Background())
	go c.loop()
}
