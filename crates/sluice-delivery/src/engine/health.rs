//! A circuit breaker per destination.
//!
//! Why: per-destination lanes already stop a hanging endpoint from blocking
//! others, but an endpoint that answers errors quickly still burns CPU and
//! store writes on every failed attempt, which on a small machine slows its
//! healthy neighbours (the bench's fan-out scenario measured 0.67×). After
//! [`TRIP_AFTER`] retryable failures in a row the breaker opens: the
//! destination gets one send at a time (a probe), and the deliveries it cannot
//! take are handed back (no attempt is counted) to wait a delay that doubles
//! with the run of failures. The first success closes it and restores full
//! concurrency. An endpoint that fails only some requests (the retry storm:
//! half at random) almost never fails eight in a row, so it keeps its full
//! concurrency.
//!
//! The breaker never stretches a retry window: a delivery it holds back is
//! handed back no later than its window's end (measured from its first
//! attempt, or from the event's arrival when it was never attempted), and
//! when it comes back with the breaker still open and the window over, it is
//! declared dead without being sent. See `docs/delivery.md`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use sluice_store::Outcome;

/// Retryable failures in a row that open the breaker.
pub(super) const TRIP_AFTER: u32 = 8;

#[derive(Debug, Default)]
pub(super) struct Health {
    failures: AtomicU32,
}

impl Health {
    /// Whether the breaker is open: only a probe may be in flight.
    pub fn open(&self) -> bool {
        self.failures.load(Ordering::SeqCst) >= TRIP_AFTER
    }

    /// Learns from one attempt's outcome. Dead and discarded outcomes say
    /// nothing about whether the endpoint is up, so they change nothing.
    pub fn record(&self, outcome: &Outcome) {
        match outcome {
            Outcome::Succeeded => self.failures.store(0, Ordering::SeqCst),
            Outcome::Retry { .. } => {
                self.failures.fetch_add(1, Ordering::SeqCst);
            }
            Outcome::Dead { .. } | Outcome::Discarded { .. } => {}
        }
    }

    /// How long a delivery handed back by an open breaker waits:
    /// `base × 2^(failures − TRIP_AFTER)`, at most `cap`.
    pub fn hand_back_delay(&self, base: Duration, cap: Duration) -> Duration {
        let over = self
            .failures
            .load(Ordering::SeqCst)
            .saturating_sub(TRIP_AFTER);
        let factor = 1u32.checked_shl(over).unwrap_or(u32::MAX);
        base.saturating_mul(factor).min(cap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Utc;

    fn retry() -> Outcome {
        Outcome::Retry { at: Utc::now() }
    }

    #[test]
    fn opens_after_a_run_of_retryable_failures() {
        let h = Health::default();
        for _ in 1..TRIP_AFTER {
            h.record(&retry());
            assert!(!h.open());
        }
        h.record(&retry());
        assert!(h.open());
    }

    #[test]
    fn one_success_closes_it_and_breaks_the_run() {
        let h = Health::default();
        for _ in 0..TRIP_AFTER {
            h.record(&retry());
        }
        h.record(&Outcome::Succeeded);
        assert!(!h.open());
        for _ in 1..TRIP_AFTER {
            h.record(&retry());
        }
        assert!(!h.open(), "the run starts again after a success");
    }

    #[test]
    fn dead_and_discarded_outcomes_change_nothing() {
        let h = Health::default();
        for _ in 0..TRIP_AFTER {
            h.record(&Outcome::Dead {
                error: "HTTP 400".into(),
            });
            h.record(&Outcome::Discarded {
                reason: "off".into(),
            });
        }
        assert!(!h.open());
    }

    #[test]
    fn hand_back_delay_doubles_with_the_run_of_failures_up_to_the_cap() {
        let h = Health::default();
        let (base, cap) = (Duration::from_millis(100), Duration::from_millis(500));
        for _ in 0..TRIP_AFTER {
            h.record(&retry());
        }
        assert_eq!(h.hand_back_delay(base, cap), Duration::from_millis(100));
        h.record(&retry());
        assert_eq!(h.hand_back_delay(base, cap), Duration::from_millis(200));
        for _ in 0..40 {
            h.record(&retry());
        }
        assert_eq!(h.hand_back_delay(base, cap), cap);
    }
}
