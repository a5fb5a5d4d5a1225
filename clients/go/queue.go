package analytics

import (
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"
)

// queue holds the encoded messages that calls have accepted until the loop
// takes them into batches. When it is full a call is refused at once, or,
// with BlockWhenFull, waits for room.
//
// Invariants, all under mu:
//   - held counts every accepted message not yet delivered or given up:
//     those in waiting plus those in batches being uploaded; heldBytes is
//     their total length. held never exceeds max, nor heldBytes maxBytes;
//     a call that would pass either is refused (or waits for room).
//   - bytes is the total length of waiting plus one separator each.
//   - Once closed, no new call is admitted. Calls already waiting for room
//     (waiters) may still be admitted, so the loop keeps running until
//     waiting is empty and waiters is zero.
//   - signaled is set when a call has woken the loop and cleared by take,
//     so the loop is woken about once per batch, not once per call.
type queue struct {
	mu        sync.Mutex
	waiting   []json.RawMessage
	bytes     int
	held      int
	heldBytes int
	waiters   int
	closed    bool
	signaled  bool
	room      chan struct{} // closed when room appears; nil when nobody waits

	// Set once by start, before any call uses the queue.
	max      int
	maxBytes int
	flushAt  int
	batchMax int           // messages in one batch
	limit    int           // bytes of messages (with separators) in one batch
	wake     chan struct{} // capacity 1: the loop has something to do

	// retrying counts uploads waiting to retry. While one waits, the
	// server is failing, and a batch starts only when a full request's
	// worth waits (or on the FlushAfter tick, the buffer filling, or
	// Close): during an outage the backlog goes out in few large batches,
	// not thousands of small ones each retrying on its own, which would
	// spend the CPU the application's calls need.
	retrying atomic.Int64
}

func (q *queue) init(cfg *settings, limit int) {
	q.max, q.maxBytes, q.flushAt, q.batchMax, q.limit = cfg.maxQueued, cfg.maxBytes, cfg.flushAt, cfg.batchMax, limit
	flushAt := cfg.flushAt
	q.wake = make(chan struct{}, 1)
	q.waiting = make([]json.RawMessage, 0, flushAt)
}

// kick wakes the loop without blocking.
func (q *queue) kick() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// due reports whether a batch should start now rather than at the next
// FlushAfter tick. Called with mu held.
func (q *queue) due() bool {
	if len(q.waiting) >= q.batchMax || q.bytes > q.limit || q.held >= q.max ||
		q.heldBytes > q.maxBytes-maxMessageBytes || q.waiters > 0 || q.closed {
		return true
	}
	return len(q.waiting) >= q.flushAt && q.retrying.Load() == 0
}

// full reports whether a message of n bytes finds no room. Called with mu
// held.
func (q *queue) full(n int) bool {
	return q.held >= q.max || q.heldBytes+n > q.maxBytes
}

// push admits one message. When the queue is full it returns ErrQueueFull
// at once unless wait is true; then it waits for room, for at most timeout
// when it is positive, or until cancel is closed; waited counts the calls
// that wait. It returns the number of waiting messages after the push.
func (q *queue) push(m json.RawMessage, wait bool, timeout time.Duration, cancel <-chan struct{}, waited *atomic.Int64) (int, error) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return 0, ErrClosed
	}
	if q.full(len(m)) {
		if !wait {
			kick := !q.signaled
			q.signaled = true
			q.mu.Unlock()
			if kick {
				q.kick() // full: start an upload if a slot is free
			}
			return 0, ErrQueueFull
		}
		waited.Add(1)
		if err := q.waitForRoom(len(m), timeout, cancel); err != nil {
			q.mu.Unlock()
			q.kick() // a closing loop may be waiting for the waiters to leave
			return 0, err
		}
	}
	if len(q.waiting) == 0 && cap(q.waiting) == 0 {
		q.waiting = make([]json.RawMessage, 0, q.flushAt)
	}
	q.waiting = append(q.waiting, m)
	q.bytes += len(m) + 1
	q.held++
	q.heldBytes += len(m)
	n := len(q.waiting)
	kick := !q.signaled && q.due()
	if kick {
		q.signaled = true
	}
	q.mu.Unlock()
	if kick {
		q.kick()
	}
	return n, nil
}

// waitForRoom blocks, with mu held on entry and on return, until a
// message of n bytes fits. It returns ErrQueueFull after timeout, when positive, and
// ErrClosed when cancel is closed (Close gave up). Room always appears in
// the end without a timeout: every upload ends, delivered or given up.
func (q *queue) waitForRoom(n int, timeout time.Duration, cancel <-chan struct{}) error {
	q.waiters++
	defer func() { q.waiters-- }()
	var timer *time.Timer
	var expired <-chan time.Time // nil, never ready, without a timeout
	for q.full(n) {
		if q.room == nil {
			q.room = make(chan struct{})
		}
		room := q.room
		kick := !q.signaled
		q.signaled = true
		q.mu.Unlock()
		if kick {
			q.kick() // full: start an upload as soon as a slot is free
		}
		if timer == nil && timeout > 0 {
			timer = time.NewTimer(timeout)
			defer timer.Stop()
			expired = timer.C
		}
		var err error
		select {
		case <-room:
		case <-expired:
			err = ErrQueueFull
		case <-cancel:
			err = ErrClosed
		}
		q.mu.Lock()
		if err != nil {
			return err
		}
	}
	return nil
}

// take removes the next batch from the waiting messages: the oldest ones,
// as many as fit in limit bytes and batchMax messages (at least one). It
// returns nil when nothing waits, or when force is false and no batch is
// due. The messages stay counted in held until release.
func (q *queue) take(force bool) []json.RawMessage {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.signaled = false
	if len(q.waiting) == 0 || !(force || q.due()) {
		return nil
	}
	n, size := 0, 0
	for n < len(q.waiting) && n < q.batchMax {
		add := len(q.waiting[n])
		if n > 0 {
			add++
		}
		if n > 0 && size+add > q.limit {
			break
		}
		size += add
		n++
	}
	batch := q.waiting[:n:n]
	q.waiting = q.waiting[n:]
	q.bytes -= size + 1
	if len(q.waiting) == 0 {
		q.waiting = nil // the next push starts a fresh array; batch keeps this one
	}
	return batch
}

// takeAll removes every waiting message, for abandonment.
func (q *queue) takeAll() []json.RawMessage {
	q.mu.Lock()
	defer q.mu.Unlock()
	all := q.waiting
	q.waiting, q.bytes = nil, 0
	return all
}

// release ends held messages (delivered or given up) and wakes the calls
// waiting for room.
func (q *queue) release(msgs []json.RawMessage) {
	size := 0
	for _, m := range msgs {
		size += len(m)
	}
	q.mu.Lock()
	q.held -= len(msgs)
	q.heldBytes -= size
	if q.room != nil {
		close(q.room)
		q.room = nil
	}
	q.mu.Unlock()
}

// close refuses new calls and wakes the loop to flush everything.
func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.kick()
}

// heldSize reports the bytes of the messages held, for Stats.
func (q *queue) heldSize() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.heldBytes
}

// state reports what the loop needs to decide whether it may exit.
func (q *queue) state() (waiting, waiters, held int, closed bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.waiting), q.waiters, q.held, q.closed
}
