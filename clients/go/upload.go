package analytics

import (
	"bytes"
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

// deliver sends msgs as one batch, then releases them from the queue
// bound, counts the outcome and reports a failure. When the server refuses
// a batch of several messages as a whole (400 or 413), one bad message or
// the size sinks it: deliver then sends each half on its own, recursively,
// so that only the refused messages fail.
func (u *uploader) deliver(msgs []json.RawMessage) {
	k := u.k
	n := int64(len(msgs))
	attempts, status, err := u.send(msgs)
	if err == nil {
		k.q.release(len(msgs))
		k.stats.sent.Add(n)
		k.verbosef("delivered batch of %d messages in %d attempt(s)", len(msgs), attempts)
		return
	}
	if splittable(status) && len(msgs) > 1 && k.ctx.Err() == nil {
		k.verbosef("the server refused a batch of %d messages, sending each half on its own: %v", len(msgs), err)
		k.stats.retried.Add(n)
		half := len(msgs) / 2
		u.deliver(msgs[:half])
		u.deliver(msgs[half:])
		return
	}
	k.q.release(len(msgs))
	if k.ctx.Err() != nil {
		err = fmt.Errorf("%w: %w", errAbandoned, err)
	}
	k.stats.failed.Add(n)
	k.fail(err, msgs, attempts)
}

// send posts msgs as one batch until it is accepted, a final status
// arrives, the attempts run out or Close gives up. It holds an upload slot
// only while a request is in flight: it gives the slot back before waiting
// to retry and takes one again before the next attempt. It returns the
// number of attempts and the last status (0 for a network error).
func (u *uploader) send(msgs []json.RawMessage) (attempts, status int, err error) {
	k := u.k
	cfg := &k.cfg
	id, sentAt := cfg.uid(), formatTime(cfg.now())
	for attempt := 1; ; attempt++ {
		if !u.slot {
			if k.acquire() != nil {
				return attempt - 1, status, err // Close gave up while it waited
			}
			u.slot = true
		}
		// The body is built per attempt, not kept while waiting: the
		// messages are held anyway, and waiting batches need no second copy.
		var wait time.Duration
		var retry bool
		wait, status, retry, err = k.post(k.encodeBatch(msgs, id, sentAt))
		if err == nil || !retry || attempt >= cfg.maxAttempts || k.ctx.Err() != nil {
			return attempt, status, err
		}
		wait = max(wait, backoff(cfg.backo, attempt-1))
		k.verbosef("attempt %d failed, retrying in %v: %v", attempt, wait, err)
		u.slot = false
		k.releaseSlot()
		if cfg.sleep(k.ctx, wait) != nil {
			return attempt, status, err
		}
		k.stats.retried.Add(int64(len(msgs)))
	}
}

// post makes one attempt. It returns the response status (0 when there
// was none), whether a failure may be retried and, when the server sent
// Retry-After, how long it asked to wait (else 0).
func (k *core) post(body []byte) (wait time.Duration, status int, retry bool, err error) {
	cfg := &k.cfg
	req, err := http.NewRequestWithContext(k.ctx, http.MethodPost, cfg.url, bytes.NewReader(body))
	if err != nil {
		return 0, 0, false, fmt.Errorf("analytics: creating request: %w", err)
	}
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth(cfg.key, "")

	res, err := cfg.http.Do(req)
	if err != nil {
		return 0, 0, true, fmt.Errorf("analytics: sending batch: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode >= 200 && res.StatusCode < 300 {
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
		return 0, res.StatusCode, false, nil
	}
	snippet, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	err = fmt.Errorf("analytics: server answered %s: %s", res.Status, strings.TrimSpace(string(snippet)))
	if !retryable(res.StatusCode) {
		return 0, res.StatusCode, false, err
	}
	wait, _ = retryAfter(res.Header.Get("Retry-After"), cfg.now(), cfg.maxRetryAfter)
	return wait, res.StatusCode, true, err
}

// abandon gives up messages that were never sent because Close timed out.
func (k *core) abandon(msgs []json.RawMessage) {
	k.q.release(len(msgs))
	k.fail(errAbandoned, msgs, 0)
}

// fail counts undeliverable messages as dropped, logs them whatever
// Verbose says and passes them to OnFailure.
func (k *core) fail(err error, msgs []json.RawMessage, attempts int) {
	k.stats.dropped.Add(int64(len(msgs)))
	k.noteLoss(len(msgs), err)
	k.logf("failed to deliver batch of %d messages after %d attempt(s): %v", len(msgs), attempts, err)
	if k.cfg.onFailure != nil {
		k.cfg.onFailure(err, msgs)
	}
}
