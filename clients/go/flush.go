package analytics

import (
	"encoding/json"
	"time"
)

// envelopeSlack covers batch-envelope bytes that vary: a messageId or
// sentAt longer than usual.
const envelopeSlack = 64

// pending is the batch being filled by the loop.
type pending struct {
	msgs  []json.RawMessage
	bytes int // encoded messages plus separating commas
}

// loop owns the queue: it groups messages into batches and hands each batch
// to an upload goroutine. It flushes when the batch reaches flushAt
// messages, when flushAfter has passed since the last flush, before the
// body would pass maxBatchBytes, and when Close closes the queue. It returns
// after the last upload has finished.
func (c *Client) loop() {
	defer close(c.done)
	cfg := &c.cfg
	limit := cfg.maxBatchBytes - envelopeBytes(len(cfg.contextJSON)) - envelopeSlack
	cur := pending{msgs: make([]json.RawMessage, 0, cfg.flushAt)}
	timer := time.NewTimer(cfg.flushAfter)
	defer timer.Stop()

	for {
		select {
		case m, ok := <-c.in:
			if !ok {
				c.verbosef("closing: flushing %d queued messages", len(cur.msgs))
				c.flush(&cur)
				c.uploads.Wait()
				c.verbosef("closed: all uploads finished")
				return
			}
			if len(cur.msgs) > 0 && cur.bytes+1+len(m) > limit {
				c.verbosef("flushing %d messages: the next one would pass %d bytes", len(cur.msgs), cfg.maxBatchBytes)
				c.flush(&cur)
				timer.Reset(cfg.flushAfter)
			}
			if len(cur.msgs) > 0 {
				cur.bytes++
			}
			cur.msgs = append(cur.msgs, m)
			cur.bytes += len(m)
			c.verbosef("buffered message (%d/%d, %d bytes)", len(cur.msgs), cfg.flushAt, len(m))
			if len(cur.msgs) >= cfg.flushAt {
				c.verbosef("flushing %d messages: FlushAt reached", len(cur.msgs))
				c.flush(&cur)
				timer.Reset(cfg.flushAfter)
			}
		case <-timer.C:
			if len(cur.msgs) > 0 {
				c.verbosef("flushing %d messages: FlushAfter (%v) passed", len(cur.msgs), cfg.flushAfter)
				c.flush(&cur)
			}
			timer.Reset(cfg.flushAfter)
		}
	}
}

// flush hands the current batch to an upload goroutine and starts a new
// one. It waits for a free upload slot; while it waits, calls keep being
// queued up to MaxQueueSize. When Close has timed out it drops the batch.
func (c *Client) flush(cur *pending) {
	if len(cur.msgs) == 0 {
		return
	}
	msgs := cur.msgs
	*cur = pending{msgs: make([]json.RawMessage, 0, c.cfg.flushAt)}

	if c.ctx.Err() != nil {
		c.abandon(msgs)
		return
	}
	select {
	case c.slots <- struct{}{}:
	case <-c.ctx.Done():
		c.abandon(msgs)
		return
	}
	c.uploads.Add(1)
	go func() {
		defer c.uploads.Done()
		defer func() { <-c.slots }()
		c.upload(msgs)
	}()
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
