package analytics

import (
	"encoding/json"
	"time"
)

// envelopeSlack covers batch-envelope bytes that vary: a messageId or
// sentAt longer than usual.
const envelopeSlack = 64

// loop turns waiting messages into batches and hands each to an upload
// goroutine, with at most maxUploads uploads in flight. A batch starts when
// FlushAt messages wait, when FlushAfter has passed since the last batch,
// when the waiting messages would pass the batch byte limit, when the queue
// is full, and on Close. A batch takes every waiting message that fits in
// 500 000 bytes and 2500 messages, not just FlushAt of them, so when
// uploads are slow the batches grow with the backlog. It returns once
// Close has been called and every message has been delivered or given up.
func (c *Client) loop() {
	defer close(c.done)
	cfg := &c.cfg
	timer := time.NewTimer(cfg.flushAfter)
	defer timer.Stop()
	cancelled := c.ctx.Done()
	inflight := 0
	timerDue := false
	announced := false

	for {
		waiting, waiters, _, closed := c.q.state()
		if closed && !announced {
			announced = true
			c.verbosef("closing: flushing %d queued messages", waiting)
		}
		if c.ctx.Err() != nil {
			if all := c.q.takeAll(); len(all) > 0 {
				c.abandon(all)
			}
		}
		for inflight < cfg.maxUploads && c.ctx.Err() == nil {
			batch := c.q.take(closed || timerDue)
			if batch == nil {
				break
			}
			if cfg.verbose {
				c.verbosef("flushing %d messages: %s", len(batch), flushReason(len(batch), closed, timerDue, cfg))
			}
			timerDue = false
			timer.Reset(cfg.flushAfter)
			inflight++
			go c.upload(batch)
		}
		if closed && inflight == 0 {
			waiting, waiters, _, _ = c.q.state()
			if waiting == 0 && waiters == 0 {
				c.verbosef("closed: all uploads finished")
				return
			}
		}
		select {
		case <-c.q.wake:
		case <-c.finished:
			inflight--
		case <-timer.C:
			if w, _, _, _ := c.q.state(); w > 0 {
				timerDue = true
			} else {
				timer.Reset(cfg.flushAfter)
			}
		case <-cancelled:
			cancelled = nil // handled at the top of the loop, once
		}
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
// {"batch":[...],"context":{...},"messageId":"...","sentAt":"..."}.
func (c *Client) encodeBatch(msgs []json.RawMessage) []byte {
	n := envelopeBytes(len(c.cfg.contextJSON)) + envelopeSlack + len(msgs)
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
	b = append(b, c.cfg.contextJSON...)
	b = append(b, `,"messageId":`...)
	b = appendJSONString(b, c.cfg.uid())
	b = append(b, `,"sentAt":`...)
	b = appendJSONString(b, formatTime(c.cfg.now()))
	return append(b, '}')
}

func appendJSONString(b []byte, s string) []byte {
	q, err := json.Marshal(s)
	if err != nil { // cannot happen for a string
		return append(b, `""`...)
	}
	return append(b, q...)
}
