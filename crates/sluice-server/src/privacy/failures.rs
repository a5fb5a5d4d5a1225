//! When the regulation job gives up on a regulation (pure; see
//! `docs/privacy.md`, "Failure").
//!
//! A store error says nothing about whether it will last (a restarting
//! PostgreSQL and a corrupt row look alike), so the job retries a failing
//! regulation with a back-off that doubles from the poll interval up to
//! [`MAX_BACKOFF`], and marks it `FAILED` after [`MAX_TRIES`] failed tries
//! in a row: with the default poll interval (200 ms) that is about 100 s
//! of failing, longer than a database restart takes. A step that succeeds starts the count
//! afresh; so does another regulation.

use std::time::Duration;

/// Failed tries in a row after which a regulation is `FAILED`.
pub const MAX_TRIES: u32 = 10;
/// The longest wait between two tries.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// Consecutive failed tries of one regulation.
#[derive(Debug, Default)]
pub struct Failures {
    regulation: Option<String>,
    tries: u32,
}

/// What the job does after a failed try.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Try again after this long.
    Retry(Duration),
    /// Mark the regulation `FAILED`.
    GiveUp { tries: u32 },
}

impl Failures {
    /// Counts a failed try of `regulation` and says what to do next.
    pub fn failed(&mut self, regulation: &str, poll: Duration) -> Verdict {
        if self.regulation.as_deref() != Some(regulation) {
            self.regulation = Some(regulation.to_owned());
            self.tries = 0;
        }
        self.tries += 1;
        if self.tries >= MAX_TRIES {
            let tries = self.tries;
            self.clear();
            return Verdict::GiveUp { tries };
        }
        let doubled = poll.saturating_mul(1 << (self.tries - 1).min(20));
        Verdict::Retry(doubled.min(MAX_BACKOFF))
    }

    /// A step succeeded: the next failure counts from one.
    pub fn clear(&mut self) {
        self.regulation = None;
        self.tries = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLL: Duration = Duration::from_millis(200);

    #[test]
    fn retries_back_off_then_give_up_after_max_tries_in_a_row() {
        let mut f = Failures::default();
        assert_eq!(f.failed("reg_1", POLL), Verdict::Retry(POLL));
        assert_eq!(f.failed("reg_1", POLL), Verdict::Retry(POLL * 2));
        assert_eq!(f.failed("reg_1", POLL), Verdict::Retry(POLL * 4));
        for _ in 4..MAX_TRIES {
            assert!(matches!(f.failed("reg_1", POLL), Verdict::Retry(d) if d <= MAX_BACKOFF));
        }
        assert_eq!(
            f.failed("reg_1", POLL),
            Verdict::GiveUp { tries: MAX_TRIES }
        );
        assert_eq!(f.failed("reg_1", POLL), Verdict::Retry(POLL), "fresh count");
    }

    #[test]
    fn a_success_or_another_regulation_starts_the_count_afresh() {
        let mut f = Failures::default();
        for _ in 1..MAX_TRIES {
            f.failed("reg_1", POLL);
        }
        f.clear();
        assert_eq!(f.failed("reg_1", POLL), Verdict::Retry(POLL));
        for _ in 2..MAX_TRIES {
            f.failed("reg_1", POLL);
        }
        assert_eq!(f.failed("reg_2", POLL), Verdict::Retry(POLL));
    }

    #[test]
    fn the_back_off_never_exceeds_its_cap() {
        let mut f = Failures::default();
        for _ in 1..MAX_TRIES {
            if let Verdict::Retry(d) = f.failed("reg_1", Duration::from_secs(30)) {
                assert!(d <= MAX_BACKOFF);
            }
        }
    }
}
