package analytics

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// userAgent is analytics-go v2's User-Agent header.
const userAgent = "analytics-go (version: " + Version + ")"

// maxErrorBody bounds how much of an error response is read into the error.
const maxErrorBody = 512

// maxErrorRead bounds how much of an error response is read to find the
// index of the refused batch item.
const maxErrorRead = 4096

// errAbandoned ends the batches that are still queued or uploading when
// Close times out.
var errAbandoned = errors.New("analytics: abandoned when Close timed out")

// upload delivers one batch, then tells the loop it has ended. It starts
// holding the upload slot the loop took for it.
func (k *core) upload(msgs []json.RawMessage) {
	u := uploader{k: k, slot: true}
	defer func() {
		if u.slot {
			<-k.slots
		}
		k.uploads.Add(-1)
		k.notifyLoop()
	}()
	u.deliver(msgs)
}

// uploader is one upload goroutine's state.
type uploader struct {
	k    *core
	slot bool // it holds an upload slot
}

// deliver sends msgs as one batch, then releases them from the buffer,
// counts the outcome and reports a failure. When the server refuses a
// batch of several messages as a whole (400 or 413), one bad message or
// the size sinks it. A Sluice server names the refused item in its 400
// answer: deliver then gives up that message alone and sends the rest
// again, so one bad message costs one more request. Without an index
// (another server, or 413) it sends each half on its own, recursively, so
// that only the refused messages fail.
func (u *uploader) deliver(msgs []json.RawMessage) {
	k := u.k
	n := int64(len(msgs))
	r := u.send(msgs)
	if r.err == nil {
		k.q.release(msgs)
		k.stats.sent.Add(n)
		k.verbosef("delivered batch of %d messages in %d attempt(s)", len(msgs), r.attempts)
		if k.cfg.onSuccess != nil {
			k.cfg.onSuccess(msgs)
		}
		return
	}
	if splittable(r.status) && len(msgs) > 1 && k.ctx.Err() == nil {
		if i := r.index; i >= 0 && i < len(msgs) {
			k.verbosef("the server refused message %d of a batch of %d, sending the others again: %v", i, len(msgs), r.err)
			bad := msgs[i : i+1 : i+1]
			k.q.release(bad)
			k.stats.failed.Add(1)
			k.fail(r.err, bad, r.attempts)
			rest := append(msgs[:i:i], msgs[i+1:]...) // a new array: msgs stays intact
			k.stats.retried.Add(int64(len(rest)))
			u.deliver(rest)
			return
		}
		k.verbosef("the server refused a batch of %d messages, sending each half on its own: %v", len(msgs), r.err)
		k.stats.retried.Add(n)
		half := len(msgs) / 2
		u.deliver(msgs[:half])
		u.deliver(msgs[half:])
		return
	}
	k.q.release(msgs)
	err := r.err
	if k.ctx.Err() != nil {
		err = fmt.Errorf("%w: %w", errAbandoned, err)
	}
	k.stats.failed.Add(n)
	k.fail(err, msgs, r.attempts)
}

// result is how sending one batch ended.
type result struct {
	attempts int
	status   int // the last status; 0 for a network error
	index    int // the batch item the server refused (400), else -1
	err      error
}

// send posts msgs as one batch until it is accepted, a final status
// arrives, the attempts run out or Close gives up. It holds an upload slot
// only while a request is in flight: it gives the slot back before waiting
// to retry and takes one again before the next attempt.
func (u *uploader) send(msgs []json.RawMessage) (r result) {
	k := u.k
	cfg := &k.cfg
	id, sentAt := cfg.uid(), formatTime(cfg.now())
	r.index = -1
	for attempt := 1; ; attempt++ {
		if !u.slot {
			if k.acquire() != nil {
				r.attempts = attempt - 1
				return r // Close gave up while it waited
			}
			u.slot = true
		}
		// The body is built per attempt, not kept while waiting: the
		// messages are held anyway, and waiting batches need no second copy.
		a := k.post(k.encodeBatch(msgs, id, sentAt))
		r = result{attempts: attempt, status: a.status, index: a.index, err: a.err}
		if a.err == nil || !a.retry || attempt >= cfg.maxAttempts || k.ctx.Err() != nil {
			return r
		}
		wait := max(a.wait, backoff(cfg.backo, attempt-1))
		k.verbosef("attempt %d failed, retrying in %v: %v", attempt, wait, a.err)
		u.slot = false
		k.releaseSlot()
		k.q.retrying.Add(1)
		slept := cfg.sleep(k.ctx, wait)
		if k.q.retrying.Add(-1) == 0 {
			k.notifyLoop() // small batches may start again
		}
		if slept != nil {
			return r
		}
		k.stats.retried.Add(int64(len(msgs)))
	}
}

// answer is the outcome of one attempt.
type answer struct {
	status int           // the response status; 0 when there was none
	retry  bool          // the failure may be retried
	wait   time.Duration // what Retry-After asked for, else 0
	index  int           // the batch item a 400 names, else -1
	err    error
}

// post makes one attempt.
func (k *core) post(body []byte) answer {
	cfg := &k.cfg
	var rd io.Reader = bytes.NewReader(body)
	if cfg.gzip {
		rd = bytes.NewReader(gzipBytes(body))
	}
	req, err := http.NewRequestWithContext(k.ctx, http.MethodPost, cfg.url, rd)
	if err != nil {
		return answer{index: -1, err: fmt.Errorf("analytics: creating request: %w", err)}
	}
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Content-Type", "application/json")
	if cfg.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	req.SetBasicAuth(cfg.key, "")

	res, err := cfg.http.Do(req)
	if err != nil {
		return answer{retry: true, index: -1, err: fmt.Errorf("analytics: sending batch: %w", err)}
	}
	defer res.Body.Close()
	a := answer{status: res.StatusCode, index: -1}
	if res.StatusCode >= 200 && res.StatusCode < 300 {
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
		return a
	}
	text, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorRead))
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	if res.StatusCode == http.StatusBadRequest {
		a.index = refusedIndex(text)
	}
	snippet := text[:min(len(text), maxErrorBody)]
	a.err = fmt.Errorf("analytics: server answered %s: %s", res.Status, strings.TrimSpace(string(snippet)))
	if !retryable(res.StatusCode) {
		return a
	}
	a.retry = true
	a.wait, _ = retryAfter(res.Header.Get("Retry-After"), cfg.now(), cfg.maxRetryAfter)
	return a
}

// refusedIndex reads the index of the refused batch item from a Sluice
// error body ({"success":false,"code":…,"index":3,…}); -1 when the body
// does not name one.
func refusedIndex(body []byte) int {
	var e struct {
		Index *int `json:"index"`
	}
	if json.Unmarshal(body, &e) != nil || e.Index == nil || *e.Index < 0 {
		return -1
	}
	return *e.Index
}

// gzipBytes compresses a request body.
func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(b)/4 + 64)
	zw := gzip.NewWriter(&buf)
	_, _ = zw.Write(b) // writes to a bytes.Buffer do not fail
	_ = zw.Close()
	return buf.Bytes()
}

// abandon gives up messages that were never sent because Close timed out.
func (k *core) abandon(msgs []json.RawMessage) {
	k.q.release(msgs)
	k.fail(errAbandoned, msgs, 0)
}

// fail counts undeliverable messages as dropped, logs them whatever
// Verbose says (rate-limited; each batch with Verbose) and passes them to
// OnFailure.
func (k *core) fail(err error, msgs []json.RawMessage, attempts int) {
	k.stats.dropped.Add(int64(len(msgs)))
	k.noteLoss(len(msgs), err)
	k.noteLossLog(lossUndelivered, len(msgs), err)
	k.verbosef("failed to deliver batch of %d messages after %d attempt(s): %v", len(msgs), attempts, err)
	if k.cfg.onFailure != nil {
		k.cfg.onFailure(err, msgs)
	}
}
