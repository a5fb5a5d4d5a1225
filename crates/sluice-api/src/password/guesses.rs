//! Slowing down guesses of a user's current password where a password
//! change asks for it: per user, the first [`FREE_FAILURES`] wrong
//! passwords cost nothing; each later one makes that user's next try wait,
//! doubling from 1 second up to [`MAX_DELAY_SECS`]. A right password clears
//! the count; one quiet for [`FORGET_SECS`] starts afresh. The wait is at
//! most a minute, so the user is never locked out. Kept per node in
//! memory, like the dashboard's sign-in throttle. Pure: the caller passes
//! the time.

use std::collections::HashMap;

/// Wrong passwords a user may give before the next try waits.
pub const FREE_FAILURES: u32 = 5;
/// The longest wait.
pub const MAX_DELAY_SECS: i64 = 60;
/// A user without wrong passwords for this long starts afresh.
pub const FORGET_SECS: f64 = 15.0 * 60.0;
/// Users tracked at most (the oldest quiet ones are forgotten first).
pub const MAX_TRACKED: usize = 10_000;

#[derive(Debug, Clone, Copy)]
struct Record {
    failures: u32,
    last_failure: f64,
    wait_until: f64,
}

/// Wrong current passwords, per user id.
#[derive(Debug, Default)]
pub struct Guesses {
    users: HashMap<String, Record>,
}

impl Guesses {
    /// `Err(seconds)` (at least 1) when `user` must wait before a password
    /// of theirs is checked again.
    pub fn check(&self, user: &str, now: f64) -> Result<(), i64> {
        match self.users.get(user) {
            Some(r) if r.wait_until > now => Err(((r.wait_until - now).ceil() as i64).max(1)),
            _ => Ok(()),
        }
    }

    /// Records a wrong password for `user`.
    pub fn failure(&mut self, user: &str, now: f64) {
        if !self.users.contains_key(user) && self.users.len() >= MAX_TRACKED {
            self.users.retain(|_, r| now - r.last_failure < FORGET_SECS);
            if self.users.len() >= MAX_TRACKED {
                return;
            }
        }
        let r = self.users.entry(user.to_owned()).or_insert(Record {
            failures: 0,
            last_failure: now,
            wait_until: now,
        });
        if now - r.last_failure >= FORGET_SECS {
            r.failures = 0;
        }
        r.failures = r.failures.saturating_add(1);
        r.last_failure = now;
        r.wait_until = now + delay_after(r.failures) as f64;
    }

    /// Records the right password for `user`: their count is cleared.
    pub fn success(&mut self, user: &str) {
        self.users.remove(user);
    }
}

/// The wait after a user's `failures`-th wrong password in a row.
pub fn delay_after(failures: u32) -> i64 {
    if failures <= FREE_FAILURES {
        return 0;
    }
    let doublings = (failures - FREE_FAILURES - 1).min(16);
    (1_i64 << doublings).min(MAX_DELAY_SECS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrong_passwords_beyond_the_free_ones_wait_longer_up_to_a_minute() {
        let mut g = Guesses::default();
        for _ in 0..FREE_FAILURES {
            assert_eq!(g.check("usr_a", 10.0), Ok(()));
            g.failure("usr_a", 10.0);
        }
        assert_eq!(g.check("usr_a", 10.0), Ok(()));
        g.failure("usr_a", 10.0);
        assert_eq!(g.check("usr_a", 10.0), Err(1));
        assert_eq!(g.check("usr_b", 10.0), Ok(()), "another user is free");
        assert_eq!(g.check("usr_a", 11.0), Ok(()));
        let waits: Vec<i64> = (1..=14).map(delay_after).collect();
        assert_eq!(waits, [0, 0, 0, 0, 0, 1, 2, 4, 8, 16, 32, 60, 60, 60]);
    }

    #[test]
    fn the_right_password_or_a_quiet_quarter_hour_clears_the_count() {
        let mut g = Guesses::default();
        for _ in 0..8 {
            g.failure("usr_a", 0.0);
        }
        assert!(g.check("usr_a", 0.5).is_err());
        g.success("usr_a");
        assert_eq!(g.check("usr_a", 0.5), Ok(()));
        for _ in 0..8 {
            g.failure("usr_a", 0.0);
        }
        let later = FORGET_SECS + 1.0;
        assert_eq!(g.check("usr_a", later), Ok(()));
        g.failure("usr_a", later);
        assert_eq!(g.check("usr_a", later), Ok(()), "counted from one again");
    }
}
