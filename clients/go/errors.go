package analytics

import "errors"

// ErrClosed is returned by a call made after Close, by a call waiting for
// room (BlockWhenFull) when Close gives up, and by every Close after the
// first (once the first has finished).
var ErrClosed = errors.New("analytics: client is closed")

// ErrQueueFull is returned by a call whose message would pass the
// buffer's budget (MaxQueueBytes, or a positive MaxQueueSize) of messages
// not yet delivered, typically because the endpoint is down or slow: at
// once by default, or with BlockWhenFull after waiting a positive
// CloseTimeout for room. The message is not buffered; the drop is counted,
// logged and reported to OnFailure.
var ErrQueueFull = errors.New("analytics: queue is full")

// ErrTooLarge is returned, wrapped with the message's size, by a call whose
// message encodes to more than 32768 bytes of JSON. The message is not
// queued.
var ErrTooLarge = errors.New("analytics: message too large")

// Validation errors carry analytics-go v2's exact messages.
var (
	errMissingUserId     = errors.New("You must pass a 'userId'.")
	errMissingPreviousId = errors.New("You must pass a 'previousId'.")
	errMissingIdentity   = errors.New("You must pass either an 'anonymousId' or 'userId'.")
	errMissingGroupId    = errors.New("You must pass a 'groupId'.")
	errMissingEvent      = errors.New("You must pass 'event'.")
)

// Errors for caller-set Message fields that the server would refuse.
var (
	errInvalidMessageId = errors.New("analytics: 'messageId' must be 1 to 100 printable characters with no space at either end")
	errInvalidTimestamp = errors.New("analytics: 'timestamp' is not an ISO 8601 date-time")
	errInvalidSentAt    = errors.New("analytics: 'sentAt' is not an ISO 8601 date-time")
)
