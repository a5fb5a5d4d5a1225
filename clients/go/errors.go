package analytics

import "errors"

// ErrClosed is returned by a call made after Close, and by every Close after
// the first.
var ErrClosed = errors.New("analytics: client is closed")

// ErrQueueFull is returned by a call when the Client already holds
// MaxQueueSize messages that are not yet delivered, typically because the
// endpoint is down or slow, and no room appeared: at once with
// DropWhenFull, otherwise after waiting CloseTimeout. The message is not
// queued; the drop is logged, counted and reported to OnFailure.
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
