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

// upload delivers one batch, then releases its messages from the queue
// bound, counts the outcome, reports a failure and tells the loop.
func (c *Client) upload(msgs []json.RawMessage) {
	defer func() { c.finished <- struct{}{} }()
	body := c.encodeBatch(msgs)
	attempts, err := c.send(body, len(msgs))
	c.q.release(len(msgs))
	if err == nil {
		c.stats.sent.Add(int64(len(msgs)))
		c.verbosef("delivered batch of %d messages (%d bytes) in %d attempt(s)", len(msgs), len(body), attempts)
		return
	}
	if c.ctx.Err() != nil {
		c.abandoned.Add(int64(len(msgs)))
		err = fmt.Errorf("%w: %w", errAbandoned, err)
	}
	c.stats.failed.Add(int64(len(msgs)))
	c.fail(err, msgs, attempts)
}

// abandon gives up messages that were never sent because Close timed out.
func (c *Client) abandon(msgs []json.RawMessage) {
	c.q.release(len(msgs))
	c.abandoned.Add(int64(len(msgs)))
	c.fail(errAbandoned, msgs, 0)
}

// fail counts undeliverable messages as dropped, logs them whatever
// Verbose says and passes them to OnFailure.
func (c *Client) fail(err error, msgs []json.RawMessage, attempts int) {
	c.stats.dropped.Add(int64(len(msgs)))
	c.logf("failed to deliver batch of %d messages after %d attempt(s): %v", len(msgs), attempts, err)
	if c.cfg.onFailure != nil {
		c.cfg.onFailure(err, msgs)
	}
}

// send posts body, which holds n messages, until it is accepted, a final
// status arrives, the attempts run out or Close times out. It returns the
// number of attempts.
func (c *Client) send(body []byte, n int) (int, error) {
	cfg := &c.cfg
	for attempt := 1; ; attempt++ {
		wait, retry, err := c.post(body)
		if err == nil {
			return attempt, nil
		}
		if !retry || attempt >= cfg.maxAttempts || c.ctx.Err() != nil {
			return attempt, err
		}
		if wait < 0 {
			wait = backoff(cfg.backo, attempt-1)
		}
		c.verbosef("attempt %d failed, retrying in %v: %v", attempt, wait, err)
		if cfg.sleep(c.ctx, wait) != nil {
			return attempt, err
		}
		c.stats.retried.Add(int64(n))
	}
}

// post makes one attempt. It returns whether the failure may be retried
// and, when the server sent Retry-After, how long to wait (else -1).
func (c *Client) post(body []byte) (wait time.Duration, retry bool, err error) {
	cfg := &c.cfg
	req, err := http.NewRequestWithContext(c.ctx, http.MethodPost, cfg.url, bytes.NewReader(body))
	if err != nil {
		return -1, false, fmt.Errorf("analytics: creating request: %w", err)
	}
	req.Header.Set("User-Agent", userAgent)
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth(cfg.key, "")

	res, err := cfg.http.Do(req)
	if err != nil {
		return -1, true, fmt.Errorf("analytics: sending batch: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode >= 200 && res.StatusCode < 300 {
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
		return -1, false, nil
	}
	snippet, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	err = fmt.Errorf("analytics: server answered %s: %s", res.Status, strings.TrimSpace(string(snippet)))
	if !retryable(res.StatusCode) {
		return -1, false, err
	}
	wait = -1
	if d, ok := retryAfter(res.Header.Get("Retry-After"), cfg.now(), cfg.maxRetryAfter); ok {
		wait = d
	}
	return wait, true, err
}
