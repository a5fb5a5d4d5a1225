package analytics

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// core is a Client's running state: its settings, queue, counters and
// background goroutines. A Client points to it, so that copies of the
// Client share it.
type core struct {
	cfg     settings
	closing atomic.Bool
	q       queue
	stats   counters
	losses  lossLog

	ctx    context.Context
	cancel context.CancelFunc // Close gave up: abandon what is left

	// slots holds one token per request in flight (capacity maxUploads).
	// An upload holds a token only while it sends, not while it waits to
	// retry.
	slots   chan struct{}
	uploads atomic.Int64  // upload goroutines alive, sleeping ones included
	freed   chan struct{} // capacity 1: a slot was released or an upload ended
	done    chan struct{} // the loop returned
	closed  chan struct{} // the first Close returned

	// Messages that failed or were abandoned after Close began, for
	// Close's error.
	lostMu   sync.Mutex
	lost     int
	lastLoss error
}

// newCore resolves a Client's settings into a core that is not started yet.
func newCore(cfg settings) *core {
	k := &core{
		cfg:    cfg,
		slots:  make(chan struct{}, cfg.maxUploads),
		freed:  make(chan struct{}, 1),
		done:   make(chan struct{}),
		closed: make(chan struct{}),
	}
	limit := cfg.maxBatchBytes - envelopeBytes(len(cfg.contextJSON)) - envelopeSlack
	k.q.init(&k.cfg, limit)
	k.losses.every = cfg.lossLogEvery
	k.ctx, k.cancel = context.WithCancel(context.Background())
	return k
}

// enqueue validates, completes, encodes and queues a message; invalid is
// the result of its v2 validation. When the buffer is full it refuses the
// message, or with BlockWhenFull waits for room. Every message it does not
// queue is dropped through reject.
func (k *core) enqueue(v interface{}, m *Message, typ string, invalid error) error {
	k.stats.calls.Add(1)
	if invalid == nil {
		invalid = validateMessage(m)
	}
	if invalid != nil {
		return k.reject(invalid, typ, m.MessageId, k.encodeForReport(v))
	}
	if k.closing.Load() {
		return k.reject(ErrClosed, typ, m.MessageId, k.encodeForReport(v))
	}
	m.fill(typ, k.cfg.uid, k.cfg.now)
	data, err := encodeMessage(v)
	if err != nil {
		return k.reject(fmt.Errorf("analytics: encoding %s message: %w", typ, err), typ, m.MessageId, nil)
	}
	if len(data) > maxMessageBytes {
		err := fmt.Errorf("%w: %d bytes of JSON, the limit is %d", ErrTooLarge, len(data), maxMessageBytes)
		return k.reject(err, typ, m.MessageId, data)
	}
	n, err := k.q.push(data, k.cfg.block, k.cfg.closeTimeout, k.ctx.Done(), &k.stats.waited)
	if err != nil {
		return k.reject(err, typ, m.MessageId, data)
	}
	if k.cfg.verbose {
		k.verbosef("buffered message (%d/%d, %d bytes)", n, k.cfg.flushAt, len(data))
	}
	return nil
}

// close is Client.Close. The first call flushes and waits; later calls
// wait for it to finish, then return ErrClosed.
func (k *core) close() error {
	if !k.closing.CompareAndSwap(false, true) {
		<-k.closed
		return ErrClosed
	}
	defer close(k.closed)
	defer k.cancel()
	k.q.close()

	timedOut := false
	if d := k.cfg.closeTimeout; d > 0 {
		timer := time.NewTimer(d)
		select {
		case <-k.done:
		case <-timer.C:
			timedOut = true
			k.cancel()
			<-k.done
		}
		timer.Stop()
	} else {
		<-k.done
	}

	k.flushLossLog(true)
	k.lostMu.Lock()
	lost, last := k.lost, k.lastLoss
	k.lostMu.Unlock()
	if timedOut {
		err := fmt.Errorf("analytics: Close timed out after %v; %d undelivered messages were dropped",
			k.cfg.closeTimeout, lost)
		if last != nil {
			err = fmt.Errorf("%w; last error: %w", err, last)
		}
		k.logf("%v", err)
		return err
	}
	if lost > 0 {
		return fmt.Errorf("analytics: Close: %d undelivered messages were dropped; last error: %w", lost, last)
	}
	return nil
}

// noteLoss records messages given up after Close began, for Close's error.
func (k *core) noteLoss(n int, err error) {
	if !k.closing.Load() {
		return
	}
	k.lostMu.Lock()
	k.lost += n
	k.lastLoss = err
	k.lostMu.Unlock()
}
