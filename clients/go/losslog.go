package analytics

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// lossKind names why messages were lost, for the rate-limited log.
type lossKind int

const (
	lossInvalid     lossKind = iota // refused by the call: invalid or unencodable
	lossTooLarge                    // refused by the call: ErrTooLarge
	lossFull                        // refused by the call: ErrQueueFull
	lossClosed                      // refused by the call: ErrClosed
	lossUndelivered                 // sent or queued, then given up
	numLossKinds
)

var lossNames = [numLossKinds]string{
	lossInvalid:     "refused as invalid",
	lossTooLarge:    "refused as too large",
	lossFull:        "refused because the buffer was full",
	lossClosed:      "refused because the client was closed",
	lossUndelivered: "not delivered",
}

// kindOf classifies the error a call was refused with.
func kindOf(err error) lossKind {
	switch {
	case errors.Is(err, ErrQueueFull):
		return lossFull
	case errors.Is(err, ErrClosed):
		return lossClosed
	case errors.Is(err, ErrTooLarge):
		return lossTooLarge
	}
	return lossInvalid
}

// lossLog writes every loss to the Logger without flooding it: the first
// loss of a kind is logged at once with its error, and later ones of that
// kind are counted and summarised in one line per period. v2-style code
// ignores the errors calls return, so without this a systematic refusal
// (a timestamp format the server does not take, an outage filling the
// buffer) would drop every message without a trace.
type lossLog struct {
	mu      sync.Mutex
	every   time.Duration
	tallies [numLossKinds]lossTally
}

type lossTally struct {
	pending int64     // lost since the last line
	last    time.Time // when the last line was written; zero: never
	err     error     // the latest error of this kind
}

// note records n messages lost for err and returns the line to log now,
// if any.
func (l *lossLog) note(kind lossKind, n int, err error, now time.Time) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	t := &l.tallies[kind]
	t.pending += int64(n)
	t.err = err
	if !t.last.IsZero() && now.Sub(t.last) < l.every {
		return ""
	}
	first := t.last.IsZero()
	line := l.line(kind, t, now)
	if first {
		line += fmt.Sprintf(" (more of this kind are summarised every %v)", l.every)
	}
	return line
}

// due returns the summary lines whose period has passed, or every pending
// one when force is set (at Close).
func (l *lossLog) due(now time.Time, force bool) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var lines []string
	for kind := range l.tallies {
		t := &l.tallies[kind]
		if t.pending > 0 && (force || now.Sub(t.last) >= l.every) {
			lines = append(lines, l.line(lossKind(kind), t, now))
		}
	}
	return lines
}

// line formats and resets a tally. Called with mu held.
func (l *lossLog) line(kind lossKind, t *lossTally, now time.Time) string {
	var s string
	if t.last.IsZero() {
		s = fmt.Sprintf("lost %d message(s), %s: %v", t.pending, lossNames[kind], t.err)
	} else {
		s = fmt.Sprintf("lost %d more message(s), %s, since the last report; last error: %v",
			t.pending, lossNames[kind], t.err)
	}
	t.pending, t.last = 0, now
	return s
}

// noteLossLog logs a loss through the rate limiter.
func (k *core) noteLossLog(kind lossKind, n int, err error) {
	if line := k.losses.note(kind, n, err, k.cfg.now()); line != "" {
		k.logf("%s", line)
	}
}

// flushLossLog writes the summaries that are due; force writes every
// pending one.
func (k *core) flushLossLog(force bool) {
	for _, line := range k.losses.due(k.cfg.now(), force) {
		k.logf("%s", line)
	}
}
