package analytics

import (
	"encoding/json"
	"sync/atomic"
)

// Stats is a snapshot of a Client's counters, from Client.Stats. Every call
// ends in exactly one of Sent and Dropped, or is still held, so once Close
// has returned and no call is in progress, Calls == Sent + Dropped.
type Stats struct {
	// Calls counts calls to Identify, Track, Page, Group and Alias,
	// including those that returned an error.
	Calls int64

	// Sent counts messages in batches the server accepted (2xx).
	Sent int64

	// Retried counts messages sent again after a failed attempt, once per
	// retry: a batch of 20 retried twice adds 40.
	Retried int64

	// Dropped counts messages that will not be delivered, for any reason:
	// refused by their call (see Refused), given up after being sent (see
	// Failed), or abandoned when Close timed out. Each drop is also
	// reported to OnFailure and logged (see Client.Logger).
	Dropped int64

	// Refused counts the Dropped messages that their call refused with an
	// error: invalid, ErrTooLarge, ErrQueueFull or ErrClosed.
	Refused int64

	// Failed counts the Dropped messages whose batch was sent at least
	// once: the server answered with a status that is not retried, the
	// attempts ran out, or Close timed out during retries. The count is
	// conservative: a batch whose request was in flight when it failed (a
	// timeout, a lost connection, Close giving up) may have been stored
	// by the server all the same, since delivery is at least once.
	Failed int64

	// Waited counts calls that found the buffer full and waited for room
	// (BlockWhenFull); without it, none wait.
	Waited int64

	// QueueDepth is the number of messages held now: waiting to be
	// batched, or in a batch being uploaded or retried.
	QueueDepth int

	// QueueBytes is the JSON size of the messages held now, at most
	// MaxQueueBytes.
	QueueBytes int
}

// counters are the Client's running totals.
type counters struct {
	calls, sent, retried, dropped, refused, failed, waited atomic.Int64
}

// Stats returns the Client's counters and its current queue depth. It may be
// called at any time, from any goroutine, before or after Close.
func (c *Client) Stats() Stats {
	k := c.rt.Load()
	if k == nil {
		return Stats{} // not started
	}
	_, _, held, _ := k.q.state()
	return Stats{
		Calls:      k.stats.calls.Load(),
		Sent:       k.stats.sent.Load(),
		Retried:    k.stats.retried.Load(),
		Dropped:    k.stats.dropped.Load(),
		Refused:    k.stats.refused.Load(),
		Failed:     k.stats.failed.Load(),
		Waited:     k.stats.waited.Load(),
		QueueDepth: held,
		QueueBytes: k.q.heldSize(),
	}
}

// reject drops a message its call refused: it counts it, logs it (at once
// with Verbose, else through the rate-limited loss log) and reports it to
// OnFailure, then returns err for the call.
func (k *core) reject(err error, typ, id string, data json.RawMessage) error {
	k.stats.dropped.Add(1)
	k.stats.refused.Add(1)
	k.noteLossLog(kindOf(err), 1, err)
	if k.cfg.verbose {
		if id == "" {
			id = "(no messageId)"
		}
		k.verbosef("dropped %s message %s: %v", typ, id, err)
	}
	if k.cfg.onFailure != nil {
		var msgs []json.RawMessage
		if data != nil {
			msgs = []json.RawMessage{data}
		}
		k.cfg.onFailure(err, msgs)
	}
	return err
}

// encodeForReport encodes a refused message for OnFailure; nil when there
// is no OnFailure or the message cannot be encoded.
func (k *core) encodeForReport(v interface{}) json.RawMessage {
	if k.cfg.onFailure == nil {
		return nil
	}
	data, err := encodeMessage(v)
	if err != nil {
		return nil
	}
	return data
}
