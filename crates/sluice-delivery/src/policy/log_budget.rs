//! How many process-log lines one destination may write: a fixed window
//! with a burst, counting what it holds back.
//!
//! Why: a dead endpoint with a backlog fails every attempt, and one warn
//! line per failure would drown the process log (and the disk) while saying
//! nothing new. Each destination may write `burst` lines per `window`; the
//! rest are counted, and the first line of the next window carries that
//! count (`suppressed=N`), so nothing is silently lost. Pure: the caller
//! passes `now`.

use std::time::{Duration, Instant};

/// One destination's log budget.
#[derive(Debug, Clone)]
pub struct LogBudget {
    burst: u32,
    window: Duration,
    window_start: Option<Instant>,
    written: u32,
    suppressed: u64,
}

impl LogBudget {
    /// A budget of `burst` lines per `window`.
    pub fn new(burst: u32, window: Duration) -> Self {
        Self {
            burst,
            window,
            window_start: None,
            written: 0,
            suppressed: 0,
        }
    }

    /// Whether a line may be written at `now`: `Some(n)` with the number
    /// of lines suppressed since the last written one, or `None` when this
    /// one is suppressed (and counted).
    pub fn admit(&mut self, now: Instant) -> Option<u64> {
        let expired = self
            .window_start
            .is_none_or(|start| now.saturating_duration_since(start) >= self.window);
        if expired {
            self.window_start = Some(now);
            self.written = 0;
        }
        if self.written < self.burst {
            self.written += 1;
            Some(std::mem::take(&mut self.suppressed))
        } else {
            self.suppressed = self.suppressed.saturating_add(1);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_is_written_then_the_rest_of_the_window_is_counted() {
        let t0 = Instant::now();
        let mut b = LogBudget::new(3, Duration::from_secs(60));
        assert_eq!(b.admit(t0), Some(0));
        assert_eq!(b.admit(t0), Some(0));
        assert_eq!(b.admit(t0 + Duration::from_secs(1)), Some(0));
        for i in 0..5 {
            assert_eq!(b.admit(t0 + Duration::from_secs(2 + i)), None);
        }
        // The next window's first line reports the five held back, once.
        assert_eq!(b.admit(t0 + Duration::from_secs(60)), Some(5));
        assert_eq!(b.admit(t0 + Duration::from_secs(61)), Some(0));
    }

    #[test]
    fn the_window_restarts_from_the_first_line_after_it_ends() {
        let t0 = Instant::now();
        let mut b = LogBudget::new(1, Duration::from_secs(10));
        assert_eq!(b.admit(t0), Some(0));
        assert_eq!(b.admit(t0 + Duration::from_secs(9)), None);
        assert_eq!(b.admit(t0 + Duration::from_secs(25)), Some(1));
        // A new window began at 25 s, not at 20 s.
        assert_eq!(b.admit(t0 + Duration::from_secs(34)), None);
        assert_eq!(b.admit(t0 + Duration::from_secs(35)), Some(1));
    }

    #[test]
    fn a_zero_burst_suppresses_everything_and_keeps_counting() {
        let t0 = Instant::now();
        let mut b = LogBudget::new(0, Duration::from_secs(1));
        for i in 0..4 {
            assert_eq!(b.admit(t0 + Duration::from_secs(i)), None);
        }
    }
}
