package analytics

import (
	"encoding/json"
	"time"
)

// envelopeSlack covers batch-envelope bytes that vary: a messageId or
// sentAt longer than usual.
const envelopeSlack = 64

// loop turns waiting messages into batches and hands each to an upload
// goroutine while an upload slot is free: at most maxUploads requests are
// in flight. A batch starts when FlushAt messages wait, when FlushAfter has
// passed since the last batch, when the waiting messages would pass the
// batch byte limit, when the buffer is full, and on Close; while an upload
// waits to retry, FlushAt alone starts no batch (see queue.retrying). At
// the defaults a batch takes every waiting message that fits in 500 000
// bytes and 2500 messages, not just FlushAt of them, so when uploads are
// slow the batches grow with the backlog; a FlushAt or Size set by the
// caller caps it. An upload waiting to retry gives its slot back, so new batches
// keep flowing while it waits. The loop returns once Close has been called
// and every message has been delivered or given up, which includes waiting
// for every upload goroutine, sleeping ones too.
func (k *core) loop() {
	defer close(k.done)
	cfg := &k.cfg
	timer := time.NewTimer(cfg.flushAfter)
	defer timer.Stop()
	cancelled := k.ctx.Done()
	timerDue := false
	announced := false

	for {
		k.flushLossLog(false)
		waiting, _, _, closed := k.q.state()
		if closed && !announced {
			announced = true
			k.verbosef("closing: flushing %d queued messages", waiting)
		}
		if k.ctx.Err() != nil {
			if all := k.q.takeAll(); len(all) > 0 {
				k.abandon(all)
			}
		}
		for k.ctx.Err() == nil && k.tryAcquire() {
			batch := k.q.take(closed || timerDue)
			if batch == nil {
				<-k.slots // unused: nothing to wake the loop for
				break
			}
			if cfg.verbose {
				k.verbosef("flushing %d messages: %s", len(batch), flushReason(len(batch), closed, timerDue, cfg))
			}
			timerDue = false
			timer.Reset(cfg.flushAfter)
			k.uploads.Add(1)
			go k.upload(batch) // it owns the slot
		}
		if closed && k.uploads.Load() == 0 {
			waiting, waiters, _, _ := k.q.state()
			if waiting == 0 && waiters == 0 {
				k.verbosef("closed: all uploads finished")
				return
			}
		}
		select {
		case <-k.q.wake:
		case <-k.freed:
		case <-timer.C:
			if w, _, _, _ := k.q.state(); w > 0 {
				timerDue = true
			} else {
				timer.Reset(cfg.flushAfter)
			}
		case <-cancelled:
			cancelled = nil // handled at the top of the loop, once
		}
	}
}

// tryAcquire takes an upload slot if one is free.
func (k *core) tryAcquire() bool {
	select {
	case k.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

// acquire waits for an upload slot; it fails when Close gives up first.
func (k *core) acquire() error {
	select {
	case k.slots <- struct{}{}:
		return nil
	case <-k.ctx.Done():
		return k.ctx.Err()
	}
}

// releaseSlot gives an upload slot back and wakes the loop to use it.
func (k *core) releaseSlot() {
	<-k.slots
	k.notifyLoop()
}

// notifyLoop wakes the loop without blocking.
func (k *core) notifyLoop() {
	select {
	case k.freed <- struct{}{}:
	default:
	}
}

// flushReason names why a batch of n messages started, for verbose logs.
func flushReason(n int, closing, timerDue bool, cfg *settings) string {
	switch {
	case n >= cfg.flushAt:
		return "FlushAt reached"
	case closing:
		return "closing"
	case timerDue:
		return "FlushAfter (" + cfg.flushAfter.String() + ") passed"
	}
	return "the queue is full or the next message would pass the batch byte limit"
}

// envelopeBytes is the size of a batch body around its messages, for a
// 36-character messageId and a 24-character sentAt.
func envelopeBytes(contextLen int) int {
	return len(`{"batch":[`) + len(`],"context":`) + contextLen +
		len(`,"messageId":"`) + 36 + len(`","sentAt":"`) + 24 + len(`"}`)
}

// encodeBatch builds the request body:
// {"batch":[...],"context":{...},"messageId":"...","sentAt":"..."}. A
// batch keeps its id and sentAt through retries, so a retry sends the same
// bytes.
func (k *core) encodeBatch(msgs []json.RawMessage, id, sentAt string) []byte {
	n := envelopeBytes(len(k.cfg.contextJSON)) + envelopeSlack + len(msgs)
	for _, m := range msgs {
		n += len(m)
	}
	b := make([]byte, 0, n)
	b = append(b, `{"batch":[`...)
	for i, m := range msgs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, m...)
	}
	b = append(b, `],"context":`...)
	b = append(b, k.cfg.contextJSON...)
	b = append(b, `,"messageId":`...)
	b = appendJSONString(b, id)
	b = append(b, `,"sentAt":`...)
	b = appendJSONString(b, sentAt)
	return append(b, '}')
}

func appendJSONString(b []byte, s string) []byte {
	q, err := json.Marshal(s)
	if err != nil { // cannot happen for a string
		return append(b, `""`...)
	}
	return append(b, q...)
}
