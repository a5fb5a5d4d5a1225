//! Sign-in throttling: repeated wrong admin tokens are slowed down, per
//! client address and overall, and never locked out for good.
//!
//! - Per address: the first [`FREE_FAILURES`] failures cost nothing; each
//!   later one makes the address wait before its next try, doubling from
//!   [`FIRST_DELAY_SECS`] up to [`MAX_DELAY_SECS`]. A sign-in that succeeds
//!   clears the address; one quiet for [`FORGET_SECS`] starts afresh.
//! - Overall: failures from every address draw on one bucket of
//!   [`BUCKET_SIZE`] tokens, refilled at one per [`REFILL_SECS`]. While it
//!   is empty, every address waits for the next token: guessing from many
//!   addresses gets no faster than that.
//!
//! A throttled try is answered `429` with `Retry-After` and is not checked
//! at all, so guessing during the wait gains nothing; the wait is at most a
//! minute, so the operator is never locked out. The state is per node and
//! in memory: a restart forgets it, and `n` nodes allow `n` times the rate.
//! This module is pure: the caller passes the time.

use std::collections::HashMap;
use std::net::IpAddr;

/// Failures an address may make before it has to wait.
pub const FREE_FAILURES: u32 = 5;
/// The wait after the first failure beyond the free ones.
pub const FIRST_DELAY_SECS: i64 = 1;
/// The longest wait for one address.
pub const MAX_DELAY_SECS: i64 = 60;
/// An address without failures for this long starts afresh.
pub const FORGET_SECS: i64 = 15 * 60;
/// Failures all addresses together may make in a burst.
pub const BUCKET_SIZE: f64 = 30.0;
/// One more failure is allowed overall every this many seconds.
pub const REFILL_SECS: f64 = 2.0;
/// Addresses tracked at most; beyond, only the overall bucket applies.
pub const MAX_ADDRESSES: usize = 10_000;

#[derive(Debug, Clone, Copy)]
struct Address {
    failures: u32,
    last_failure: f64,
    /// No try before this time.
    wait_until: f64,
}

/// The throttle's state: per-address failures and the overall bucket.
#[derive(Debug)]
pub struct Throttle {
    addresses: HashMap<IpAddr, Address>,
    tokens: f64,
    refilled_at: f64,
}

impl Default for Throttle {
    fn default() -> Self {
        Throttle {
            addresses: HashMap::new(),
            tokens: BUCKET_SIZE,
            refilled_at: 0.0,
        }
    }
}

impl Throttle {
    fn refill(&mut self, now: f64) {
        if now > self.refilled_at {
            self.tokens = (self.tokens + (now - self.refilled_at) / REFILL_SECS).min(BUCKET_SIZE);
            self.refilled_at = now;
        }
    }

    /// `Err(seconds)` when a sign-in from `ip` must wait that long (at
    /// least 1) before it is checked; `Ok` when it may be checked now.
    pub fn check(&mut self, ip: IpAddr, now: f64) -> Result<(), i64> {
        self.refill(now);
        let mut wait = 0.0_f64;
        if let Some(a) = self.addresses.get(&ip) {
            wait = wait.max(a.wait_until - now);
        }
        if self.tokens < 1.0 {
            wait = wait.max((1.0 - self.tokens) * REFILL_SECS);
        }
        if wait > 0.0 {
            // Whole seconds, rounded up, as Retry-After counts them.
            Err((wait.ceil() as i64).max(1))
        } else {
            Ok(())
        }
    }

    /// Records a wrong token from `ip`.
    pub fn failure(&mut self, ip: IpAddr, now: f64) {
        self.refill(now);
        self.tokens = (self.tokens - 1.0).max(0.0);
        if !self.addresses.contains_key(&ip) && self.addresses.len() >= MAX_ADDRESSES {
            self.forget_quiet(now);
            if self.addresses.len() >= MAX_ADDRESSES {
                return;
            }
        }
        let a = self.addresses.entry(ip).or_insert(Address {
            failures: 0,
            last_failure: now,
            wait_until: now,
        });
        if now - a.last_failure >= FORGET_SECS as f64 {
            a.failures = 0;
        }
        a.failures += 1;
        a.last_failure = now;
        a.wait_until = now + delay_after(a.failures) as f64;
    }

    /// Records a successful sign-in from `ip`: its failures are forgiven.
    pub fn success(&mut self, ip: IpAddr) {
        self.addresses.remove(&ip);
    }

    fn forget_quiet(&mut self, now: f64) {
        self.addresses
            .retain(|_, a| now - a.last_failure < FORGET_SECS as f64);
    }
}

/// The wait after an address's `failures`-th failure in a row.
pub fn delay_after(failures: u32) -> i64 {
    if failures <= FREE_FAILURES {
        return 0;
    }
    let doublings = (failures - FREE_FAILURES - 1).min(16);
    (FIRST_DELAY_SECS << doublings).min(MAX_DELAY_SECS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([192, 0, 2, last])
    }

    #[test]
    fn delays_start_after_the_free_failures_and_double_up_to_a_minute() {
        let delays: Vec<i64> = (1..=14).map(delay_after).collect();
        assert_eq!(delays, [0, 0, 0, 0, 0, 1, 2, 4, 8, 16, 32, 60, 60, 60]);
        assert_eq!(delay_after(u32::MAX), MAX_DELAY_SECS);
    }

    #[test]
    fn an_address_waits_after_repeated_failures_and_only_that_address() {
        let mut t = Throttle::default();
        for _ in 0..FREE_FAILURES {
            assert_eq!(t.check(ip(1), 100.0), Ok(()));
            t.failure(ip(1), 100.0);
        }
        assert_eq!(t.check(ip(1), 100.0), Ok(()));
        t.failure(ip(1), 100.0);
        assert_eq!(t.check(ip(1), 100.0), Err(1));
        assert_eq!(t.check(ip(2), 100.0), Ok(()), "another address is free");
        assert_eq!(t.check(ip(1), 101.0), Ok(()), "the wait ends");
        t.failure(ip(1), 101.0);
        assert_eq!(t.check(ip(1), 101.5), Err(2));
    }

    #[test]
    fn the_wait_never_exceeds_a_minute_so_the_operator_gets_back_in() {
        let mut t = Throttle::default();
        let mut now = 0.0;
        for _ in 0..200 {
            if let Err(wait) = t.check(ip(1), now) {
                assert!(wait <= MAX_DELAY_SECS, "{wait}");
                now += wait as f64;
            }
            t.failure(ip(1), now);
        }
        now += MAX_DELAY_SECS as f64;
        assert_eq!(t.check(ip(1), now), Ok(()));
        t.success(ip(1));
        t.failure(ip(1), now);
        assert_eq!(t.check(ip(1), now), Ok(()), "a success forgives");
    }

    #[test]
    fn a_quiet_address_starts_afresh() {
        let mut t = Throttle::default();
        for _ in 0..8 {
            t.failure(ip(1), 0.0);
        }
        assert!(t.check(ip(1), 1.0).is_err());
        let later = FORGET_SECS as f64 + 10.0;
        assert_eq!(t.check(ip(1), later), Ok(()));
        t.failure(ip(1), later);
        assert_eq!(t.check(ip(1), later), Ok(()), "counted from one again");
    }

    #[test]
    fn failures_from_many_addresses_drain_the_overall_bucket() {
        let mut t = Throttle::default();
        for n in 0..BUCKET_SIZE as u8 {
            assert_eq!(t.check(ip(n), 0.0), Ok(()));
            t.failure(ip(n), 0.0);
        }
        // A fresh address now waits for the next token.
        assert_eq!(t.check(ip(200), 0.0), Err(REFILL_SECS as i64));
        assert_eq!(t.check(ip(200), REFILL_SECS), Ok(()));
    }

    #[test]
    fn tracking_is_bounded_in_memory() {
        let mut t = Throttle::default();
        for n in 0..(MAX_ADDRESSES as u32 + 50) {
            t.failure(IpAddr::from(n.to_be_bytes()), 0.0);
        }
        assert_eq!(t.addresses.len(), MAX_ADDRESSES);
    }
}
