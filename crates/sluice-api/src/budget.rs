//! The memory budget for request bodies.
//!
//! Every byte of a request body that Sluice holds (raw, then decoded) is
//! counted against one global budget while the request is handled, and the
//! bytes of requests without an HTTP Basic write key are also counted
//! against a small share of it. A request that would go over is refused at
//! once with `503` and `Retry-After` instead of being buffered, so a crowd
//! of clients that announce large bodies and send them slowly cannot make
//! the process grow: the memory held for bodies is at most the budget,
//! whatever the number of connections. An anonymous crowd cannot take the
//! authenticated clients' share.
//!
//! The counters are plain atomics: taking and giving back is one atomic
//! add each, cheap enough for every request.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// One counter with a cap.
#[derive(Debug)]
struct Pool {
    cap: usize,
    used: AtomicUsize,
}

impl Pool {
    fn new(cap: usize) -> Self {
        Pool {
            cap,
            used: AtomicUsize::new(0),
        }
    }

    fn take(&self, n: usize) -> bool {
        let before = self.used.fetch_add(n, Ordering::AcqRel);
        if before.saturating_add(n) > self.cap {
            self.used.fetch_sub(n, Ordering::AcqRel);
            return false;
        }
        true
    }

    fn give(&self, n: usize) {
        self.used.fetch_sub(n, Ordering::AcqRel);
    }
}

/// The body budget and the time a client has to send a whole body.
#[derive(Debug)]
pub struct BodyBudget {
    total: Pool,
    anonymous: Pool,
    /// Time from the start of the body read to its last byte.
    pub timeout: Duration,
}

impl BodyBudget {
    pub fn new(total_bytes: usize, anonymous_bytes: usize, timeout: Duration) -> Arc<Self> {
        Arc::new(BodyBudget {
            total: Pool::new(total_bytes),
            anonymous: Pool::new(anonymous_bytes.min(total_bytes)),
            timeout,
        })
    }

    /// A budget large enough never to refuse, for tests and tools.
    pub fn unlimited() -> Arc<Self> {
        Self::new(usize::MAX / 2, usize::MAX / 2, Duration::from_secs(3600))
    }

    /// Bytes currently held, all requests together.
    pub fn in_use(&self) -> usize {
        self.total.used.load(Ordering::Acquire)
    }

    /// Starts holding bytes for one request; `anonymous` when the request
    /// carries no HTTP Basic write key.
    pub fn hold(self: &Arc<Self>, anonymous: bool) -> Held {
        Held {
            budget: Arc::clone(self),
            anonymous,
            bytes: 0,
        }
    }
}

/// Bytes held for one request; given back when dropped.
#[derive(Debug)]
pub struct Held {
    budget: Arc<BodyBudget>,
    anonymous: bool,
    bytes: usize,
}

impl Held {
    /// Counts `n` more bytes; false (and nothing counted) when over budget.
    pub fn take(&mut self, n: usize) -> bool {
        if n == 0 {
            return true;
        }
        if self.anonymous && !self.budget.anonymous.take(n) {
            return false;
        }
        if !self.budget.total.take(n) {
            if self.anonymous {
                self.budget.anonymous.give(n);
            }
            return false;
        }
        self.bytes += n;
        true
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if self.bytes == 0 {
            return;
        }
        self.budget.total.give(self.bytes);
        if self.anonymous {
            self.budget.anonymous.give(self.bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anonymous_requests_are_capped_at_their_share() {
        let b = BodyBudget::new(100, 30, Duration::from_secs(1));
        let mut anon = b.hold(true);
        assert!(anon.take(30));
        assert!(!b.hold(true).take(1), "anonymous share used up");
        let mut known = b.hold(false);
        assert!(known.take(70), "the rest stays for authenticated requests");
        assert!(!known.take(1), "total used up");
        drop(anon);
        assert!(b.hold(true).take(30), "given back on drop");
    }

    #[test]
    fn a_refused_take_counts_nothing() {
        let b = BodyBudget::new(10, 10, Duration::from_secs(1));
        let mut h = b.hold(true);
        assert!(!h.take(11));
        assert_eq!(h.bytes(), 0);
        assert_eq!(b.in_use(), 0);
    }
}
