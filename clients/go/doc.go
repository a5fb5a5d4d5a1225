// Package analytics is the Go client library of Sluice, a self-hosted,
// Segment-compatible event pipeline. It stands in for analytics-go v2
// (github.com/segmentio/analytics-go at 2.1.x): a program written against
// v2 compiles the same after changing only the import path. The behaviours
// that differ on purpose, each with its reason, are listed in one table in
// the README's "Migrating from analytics-go v2": chiefly, calls never wait
// on the network, losses are always logged, and one bad message no longer
// sinks its batch.
//
// A Client sends Identify, Track, Page, Group and Alias calls to the
// collection API of a Sluice server. Each call is validated and encoded
// synchronously, then buffered in memory; background goroutines group
// buffered messages into batches and upload them with POST
// {Endpoint}/v1/batch.
//
//	client := analytics.New("<WRITE_KEY>")
//	defer client.Close()
//
//	err := client.Track(&analytics.Track{
//		UserId:     "019mr8mf4r",
//		Event:      "Purchased Item",
//		Properties: map[string]interface{}{"revenue": 39.95},
//	})
//
// # Batching
//
// A batch is uploaded when FlushAt (synonym: Size, default 20) messages
// wait, when FlushAfter (synonym: Interval, default 5 seconds) has passed
// since the last flush, when the buffer is full, and on Close. A FlushAt or
// Size set by the caller also caps the messages per request, as Size did
// in v2. At the defaults a flush takes every waiting message that fits in
// one request (500 000 bytes and 2500 messages), so after an outage, or
// while the server is slow, batches grow with the backlog and delivery
// catches up. At most 8 requests are in flight at once; an upload waiting
// to retry gives its slot back while it waits, and while one waits, a new
// batch starts only when a full request's worth of messages waits (or
// FlushAfter passes, or on Close), so an outage costs few requests. When a
// setting and its synonym are both set, a positive FlushAt or FlushAfter
// wins; see Client.
//
// # Outages and memory
//
// At the default settings a call never waits on the network. While the
// server is away, messages stay in a buffer bounded by MaxQueueBytes
// (default 128 MiB: 250 350 messages of up to 536 bytes of JSON, what v2
// held before its calls started to wait) and their batches retry. A call
// whose message would pass the budget is refused at once with
// ErrQueueFull. Setting BlockWhenFull makes it wait for room instead, for
// at most a positive CloseTimeout. Memory is bounded by the budget plus one
// request body (at most 500 000 bytes) per request in flight.
//
// # Errors and delivery
//
// A call returns an error, and buffers nothing, when the message is invalid
// (v2's messages, such as "You must pass 'event'."), when a caller-set
// MessageId, Timestamp or SentAt would be refused by the server (a
// MessageId must be 1 to 100 characters with no control character and no
// space at either end; a timestamp must be the server's lenient ISO 8601),
// when its JSON encoding exceeds 32768 bytes (ErrTooLarge), when the
// buffer is full (ErrQueueFull), or after Close (ErrClosed).
//
// Uploads that fail with a network error, a 5xx status, 408 or 429 are
// retried, up to MaxAttempts (default 10) attempts in all, with
// exponential backoff and jitter: the Client's Backo, else the package
// variable Backo (v2's, from github.com/segmentio/backo-go), gives the
// wait, 100 ms doubling up to 10 s by default, and a random extra of up to
// half of it is added. A Retry-After header (capped at 10 s) lengthens a
// wait but never shortens it. Other 4xx statuses are not retried. When a
// Sluice server refuses a batch with 400, its answer names the refused
// item ("index"); the library gives up that message alone and sends the
// others again once. For 413, or a 400 that names no item, the batch is
// sent again in halves, recursively, so that only the refused messages
// fail; 401 and 403 (a bad write key) are not split.
//
// Every message that will not be delivered, for any reason, is counted in
// Stats, passed to OnFailure when it is set, and logged (see Logging).
// Delivery is at least once, so this is conservative: a batch whose
// request was in flight when it failed may have been stored by the server
// all the same. OnSuccess, when set, receives every delivered batch.
//
// # Logging
//
// Losses are always logged through Logger, whatever Verbose says, without
// flooding it: the first loss of each kind (refused as invalid, too large,
// on a full buffer or after Close; a batch not delivered) at once with its
// error, then one summary line per kind every 10 seconds with the count,
// and what remains when Close returns. Setting Verbose, or the environment
// variable DEBUG=analytics, also logs every refused call, and batching and
// upload activity.
//
// # Lifecycle
//
// Close flushes every buffered message and waits, as v2's Close did, until
// each has been delivered or has failed its retries; a positive
// CloseTimeout bounds the wait. It returns an error when messages failed
// or were abandoned after it began, and nil when all were delivered. A
// second Close waits for the first to finish, then returns ErrClosed. A
// Client is safe for concurrent use by multiple goroutines, and a copy made
// after its first call shares it. Its settings are read once, at the first
// call or Close, and must not be changed afterwards.
package analytics
