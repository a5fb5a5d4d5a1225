//! Stepping aside for ingest.
//!
//! The engine is a consumer of committed events: ingest never waits for it.
//! With SQLite both write through one writer thread, so an engine step
//! committed while ingest keeps that writer busy takes its time from
//! ingest. The engine therefore reads how busy other work keeps the writer
//! ([`sluice_store::ProfileStore::foreground_write_time`]) and, while that
//! is above [`BUSY_ABOVE`], defers its writes, but never for longer than
//! [`MAX_DEFER`] since its last one: under ingest at full speed it still
//! moves a step (one batch) a second, and catches up at full speed once the
//! burst is over. Below the threshold (2,000 events/s is a few percent of
//! the writer) nothing is deferred, so the event → identify latency stays.

use std::time::{Duration, Instant};

/// Share of wall time other work keeps the writer busy above which the
/// engine defers its writes.
pub const BUSY_ABOVE: f64 = 0.5;
/// Longest the engine defers after its last write.
pub const MAX_DEFER: Duration = Duration::from_secs(1);
/// Shortest span a busy share is measured over.
const SAMPLE: Duration = Duration::from_millis(200);

/// Whether to defer a round (pure).
pub fn defer(busy_share: f64, since_last_write: Duration) -> bool {
    busy_share > BUSY_ABOVE && since_last_write < MAX_DEFER
}

/// The busy share of the writer, measured between readings.
pub struct Pace {
    sampled_at: Instant,
    busy_then: Duration,
    share: f64,
    last_write: Instant,
}

impl Pace {
    pub fn new(busy: Duration) -> Pace {
        let now = Instant::now();
        Pace {
            sampled_at: now,
            busy_then: busy,
            share: 0.0,
            last_write: now,
        }
    }

    /// Takes a reading of the writer's foreground time; returns whether the
    /// round should be deferred.
    pub fn defer(&mut self, busy: Duration) -> bool {
        let now = Instant::now();
        let span = now.duration_since(self.sampled_at);
        if span >= SAMPLE {
            let worked = busy.saturating_sub(self.busy_then);
            self.share = worked.as_secs_f64() / span.as_secs_f64();
            self.sampled_at = now;
            self.busy_then = busy;
        }
        defer(self.share, now.duration_since(self.last_write))
    }

    /// The engine wrote (or had nothing to write).
    pub fn wrote(&mut self) {
        self.last_write = Instant::now();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defers_only_while_busy_and_never_past_the_longest_deferral() {
        assert!(defer(0.9, Duration::from_millis(10)));
        assert!(!defer(0.9, MAX_DEFER), "a step a second at least");
        assert!(!defer(0.2, Duration::ZERO), "a quiet writer is not deferred to");
        assert!(!defer(BUSY_ABOVE, Duration::ZERO));
    }

    #[test]
    fn the_share_is_measured_over_a_span() {
        let mut pace = Pace::new(Duration::ZERO);
        assert!(!pace.defer(Duration::ZERO), "no reading yet");
        std::thread::sleep(SAMPLE);
        // Busy for longer than the span: fully busy.
        assert!(pace.defer(SAMPLE * 2));
        pace.last_write = Instant::now() - MAX_DEFER;
        assert!(!pace.defer(SAMPLE * 2));
    }
}
