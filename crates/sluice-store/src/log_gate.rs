//! Rate limits for log lines that repeat during an outage.
//!
//! While the database is away, every request and every background round
//! fails alike: a line per failure buries the one line an operator needs
//! and costs the disk the outage may already lack. A [`LogGate`] lets one
//! line through per period and counts the ones it holds back, so the next
//! line says how many were left out. Each call site keeps its own gate
//! (a `static`), so one noisy task does not silence another.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// One line per period, counting the rest.
pub struct LogGate {
    period_ms: u64,
    /// Milliseconds since [`epoch`] of the last line let through, plus one
    /// (0: none yet).
    last: AtomicU64,
    held_back: AtomicU64,
}

/// The process's clock origin for gates (monotonic).
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

impl LogGate {
    /// A gate letting one line through per `period`.
    pub const fn new(period: Duration) -> Self {
        LogGate {
            period_ms: period.as_millis() as u64,
            last: AtomicU64::new(0),
            held_back: AtomicU64::new(0),
        }
    }

    /// `Some(lines held back since the last one)` when a line may be
    /// written now; `None` (and one more held back) otherwise.
    pub fn allow(&self) -> Option<u64> {
        let now = u64::try_from(epoch().elapsed().as_millis()).unwrap_or(u64::MAX);
        self.allow_at(now.saturating_add(1))
    }

    /// [`LogGate::allow`] at `now` (milliseconds since the epoch, plus one).
    fn allow_at(&self, now: u64) -> Option<u64> {
        let last = self.last.load(Ordering::Relaxed);
        let due = last == 0 || now >= last.saturating_add(self.period_ms);
        if due
            && self
                .last
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            return Some(self.held_back.swap(0, Ordering::Relaxed));
        }
        self.held_back.fetch_add(1, Ordering::Relaxed);
        None
    }
}

/// How often a background task that keeps failing the same way says so.
pub const BACKGROUND_EVERY: Duration = Duration::from_secs(10);

/// `tracing::warn!` of a failure, at most once per `period` at this call
/// site; each line carries `similar_since_last`, the lines held back.
///
/// ```
/// # let e = "connection refused";
/// sluice_store::warn_every!(sluice_store::log_gate::BACKGROUND_EVERY, e, "refreshing routes");
/// ```
#[macro_export]
macro_rules! warn_every {
    ($period:expr, $error:expr, $message:literal) => {{
        static GATE: $crate::log_gate::LogGate = $crate::log_gate::LogGate::new($period);
        if let Some(held_back) = GATE.allow() {
            ::tracing::warn!(error = %$error, similar_since_last = held_back, $message);
        }
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_period_goes_through_and_counts_the_rest() {
        let gate = LogGate::new(Duration::from_secs(10));
        assert_eq!(gate.allow_at(1), Some(0), "the first line goes out");
        assert_eq!(gate.allow_at(2), None);
        assert_eq!(gate.allow_at(9_999), None);
        assert_eq!(
            gate.allow_at(10_001),
            Some(2),
            "then one per period, with the count"
        );
        assert_eq!(gate.allow_at(10_002), None);
    }

    #[test]
    fn gates_are_independent() {
        let a = LogGate::new(Duration::from_secs(1));
        let b = LogGate::new(Duration::from_secs(1));
        assert_eq!(a.allow_at(5), Some(0));
        assert_eq!(b.allow_at(5), Some(0));
    }
}
