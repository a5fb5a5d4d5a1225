// Package analytics is the Go client library of Sluice, a self-hosted,
// Segment-compatible event pipeline. It is a drop-in replacement for
// analytics-go v2 (github.com/segmentio/analytics-go at 2.1.x): programs
// written against v2 compile and behave the same after changing only the
// import path.
//
// A Client sends Identify, Track, Page, Group and Alias calls to the
// collection API of a Sluice server. Each call is validated and encoded
// synchronously, then queued in memory; a background goroutine groups queued
// messages into batches and uploads them with POST {Endpoint}/v1/batch, so no
// call waits for an HTTP request.
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
// A batch is uploaded when FlushAt (synonym: Size, default 20) messages are
// queued, when FlushAfter (synonym: Interval, default 5 seconds) has passed
// since the last flush, when the queue is full, and on Close. FlushAt
// decides when a flush starts, not how much it carries: a flush takes every
// waiting message that fits in one request (500 000 bytes and 2500
// messages), so when the server is slow the batches grow with the backlog
// and throughput keeps up. At most 8 requests are in flight at once; an
// upload waiting to retry gives its slot back while it waits, so batches
// behind it keep flowing. Setting FlushAt or Size to 1 uploads every call
// at once while an upload slot is free. When a setting and its synonym are both set, a positive FlushAt or
// FlushAfter wins; see Client.
//
// # Back-pressure and memory
//
// A Client holds at most MaxQueueSize (default 10000) messages: waiting,
// or in a batch being uploaded or waiting to retry. A call made when it is
// full waits for room, as a v2 call blocked on v2's queue, until an upload
// ends (delivered, or given up after its retries); with a positive
// CloseTimeout it waits at most that long, then drops its message with
// ErrQueueFull. Setting DropWhenFull returns ErrQueueFull at once instead.
// Memory is bounded by MaxQueueSize messages of at most 32768 bytes of
// JSON each, plus one request body (at most 500 000 bytes) per request in
// flight.
//
// # Errors and delivery
//
// A call returns an error, and queues nothing, when the message is invalid
// (v2's messages, such as "You must pass 'event'."), when a caller-set
// MessageId, Timestamp or SentAt would be refused by the server (a
// MessageId must be 1 to 100 characters with no control character and no
// space at either end; a timestamp must be the server's lenient ISO 8601),
// when its JSON encoding exceeds 32768 bytes (ErrTooLarge), when the queue
// stays full (ErrQueueFull), or after Close (ErrClosed). Calls never wait
// for the network, only for room in a full queue.
//
// Uploads that fail with a network error, a 5xx status, 408 or 429 are
// retried, up to 10 attempts in all, with exponential backoff and jitter:
// Backo (the analytics-go v2 variable, from github.com/segmentio/backo-go)
// gives the wait, 100 ms doubling up to 10 s by default, and a random extra
// of up to half of it is added, so no wait is shorter than v2's. A
// Retry-After header (seconds or an HTTP date, capped at 10 s, v2's longest
// backoff) lengthens a wait but never shortens it. Other 4xx statuses are
// not retried. When the server refuses a batch of several messages with
// 400 or 413, the batch is sent again in halves, recursively, so that only
// the refused messages fail; 401 and 403 (a bad write key) are not split.
//
// Every message that will not be delivered, for any reason (a refused
// call, a batch given up after retries or on a final status, or abandoned
// when a CloseTimeout passes), is counted in Stats and passed to OnFailure
// when it is set. Delivery is at least once, so this is conservative: a
// batch whose request was in flight when it failed may have been stored by
// the server all the same. Stats also counts calls, messages sent and
// retries, and gives the current queue depth.
//
// # Logging
//
// Batches that could not be delivered are always logged. Setting Verbose,
// or the environment variable DEBUG=analytics, also logs every call refused
// with an error (the caller has the error already), and batching and
// upload activity.
//
// # Lifecycle
//
// Close flushes every queued message and waits, as v2's Close did, until
// each has been delivered or has failed its retries; a positive
// CloseTimeout bounds the wait. It returns an error when messages failed
// or were abandoned after it began, and nil when all were delivered. A
// second Close waits for the first to finish, then returns ErrClosed. A
// Client is safe for concurrent use by multiple goroutines, and a copy made
// after its first call shares it. Its settings are read once, at the first
// call or Close, and must not be changed afterwards.
package analytics
