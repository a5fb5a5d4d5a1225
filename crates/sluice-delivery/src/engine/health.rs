//! A circuit breaker per destination.
//!
//! Why: per-destination lanes already stop a hanging endpoint from blocking
//! others, but an endpoint that answers errors quickly still burns CPU and
//! store writes on every failed attempt, which on a small machine slows its
//! healthy neighbours (the bench's fan-out scenario measured 0.67×). After
//! [`TRIP_AFTER`] retryable failures in a row the breaker opens: the
//! destination gets one send at a time (a probe), and the deliveries it cannot
//! take are handed back (no attempt is counted) to wait a delay that doubles
//! with each failed probe. The first success closes it and restores full
//! concurrency.
//!
//! Only probes lengthen that delay. The sends in flight when the endpoint
//! went down fail together (64 timeouts at once, with the default
//! concurrency), and counting each of them as one more failure in a row
//! would hold the destination's backlog back for `backoff_cap` (10 min) after
//! a few seconds of outage. Probes go out one at a time, so their failures
//! are a true run, and what waits is handed back for about as long as the
//! next probe: once a probe succeeds, the backlog follows within a delay of
//! about one probe. An endpoint that fails only some requests (the retry storm:
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
    /// Retryable failures since the last success: the run that trips.
    failures: AtomicU32,
    /// Of those, the ones of sends that started with the breaker open.
    failed_probes: AtomicU32,
}

impl Health {
    /// Whether the breaker is open: only a probe may be in flight.
    pub fn open(&self) -> bool {
        self.failures.load(Ordering::SeqCst) >= TRIP_AFTER
    }

    /// Learns from one attempt's outcome; `probe` says whether its send
    /// started with the breaker open ([`Self::open`] read just before it).
    /// Dead and discarded outcomes say nothing about whether the endpoint is
    /// up, so they change nothing.
    pub fn record(&self, outcome: &Outcome, probe: bool) {
        match outcome {
            Outcome::Succeeded => {
                self.failures.store(0, Ordering::SeqCst);
                self.failed_probes.store(0, Ordering::SeqCst);
            }
            Outcome::Retry { .. } => {
                self.failures.fetch_add(1, Ordering::SeqCst);
                if probe {
                    self.failed_probes.fetch_add(1, Ordering::SeqCst);
                }
            }
            Outcome::Dead { .. } | Outcome::Discarded { .. } => {}
        }
    }

    /// How long a delivery handed back by an open breaker waits:
    /// `base × 2^(failed probes)`, at most `cap`.
    pub fn hand_back_delay(&self, base: Duration, cap: Duration) -> Duration {
        let over = self.failed_probes.load(Ordering::SeqCst);
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
            h.record(&retry(), false);
            assert!(!h.open());
        }
        h.record(&retry(), false);
        assert!(h.open());
    }

    #[test]
    fn one_success_closes_it_and_breaks_the_run() {
        let h = Health::default();
        for _ in 0..TRIP_AFTER {
            h.record(&retry(), false);
        }
        h.record(&Outcome::Succeeded, false);
        assert!(!h.open());
        for _ in 1..TRIP_AFTER {
            h.record(&retry(), false);
        }
        assert!(!h.open(), "the run starts again after a success");
    }

    #[test]
    fn dead_and_discarded_outcomes_change_nothing() {
        let h = Health::default();
        for _ in 0..TRIP_AFTER {
            h.record(
                &Outcome::Dead {
                    error: "HTTP 400".into(),
                },
                true,
            );
            h.record(
                &Outcome::Discarded {
                    reason: "off".into(),
                },
                true,
            );
        }
        assert!(!h.open());
    }

    #[test]
    fn hand_back_delay_doubles_with_each_failed_probe_up_to_the_cap() {
        let h = Health::default();
        let (base, cap) = (Duration::from_millis(100), Duration::from_millis(500));
        for _ in 0..TRIP_AFTER {
            h.record(&retry(), false);
        }
        assert_eq!(h.hand_back_delay(base, cap), Duration::from_millis(100));
        h.record(&retry(), true);
        assert_eq!(h.hand_back_delay(base, cap), Duration::from_millis(200));
        for _ in 0..40 {
            h.record(&retry(), true);
        }
        assert_eq!(h.hand_back_delay(base, cap), cap);
        h.record(&Outcome::Succeeded, true);
        assert!(!h.open());
        assert_eq!(h.hand_back_delay(base, cap), base, "a success ends the run");
    }

    #[test]
    fn sends_failing_together_open_the_breaker_without_lengthening_the_wait() {
        // An endpoint going down fails every send in flight at once.
        let h = Health::default();
        let (base, cap) = (Duration::from_secs(1), Duration::from_secs(600));
        for _ in 0..64 {
            h.record(&retry(), false);
        }
        assert!(h.open());
        assert_eq!(h.hand_back_delay(base, cap), base);
    }
}
