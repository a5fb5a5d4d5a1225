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
// since the last flush, before a batch would pass 500 000 bytes, and on
// Close. Setting FlushAt or Size to 1 uploads every call immediately. When a
// setting and its synonym are both set, a positive FlushAt or FlushAfter
// wins; see Client.
//
// # Errors and delivery
//
// A call returns an error, and queues nothing, when the message is invalid
// (v2's messages, such as "You must pass 'event'."), when its JSON encoding
// exceeds 32768 bytes (ErrTooLarge), when the queue already holds
// MaxQueueSize messages (ErrQueueFull), or after Close (ErrClosed). Calls
// never block on the network.
//
// Uploads that fail with a network error, a 5xx status or 429 are retried,
// up to 10 attempts in all, with capped exponential backoff and jitter: the
// wait starts at 100 ms and doubles up to 10 s, and its upper half is
// random. A Retry-After header (seconds or an HTTP date, honoured up to 5
// minutes) replaces the computed wait. Other 4xx statuses are not retried. A batch that cannot be delivered is
// logged to Logger and passed to OnFailure when it is set.
//
// # Logging
//
// Failures are always logged. Setting Verbose, or the environment variable
// DEBUG=analytics, also logs batching and upload activity.
//
// # Lifecycle
//
// Close flushes every queued message and waits for uploads in flight, for at
// most CloseTimeout. A Client is safe for concurrent use by multiple
// goroutines. Its settings are read once, at the first call or Close, and
// must not be changed afterwards.
package analytics
