//! How many failed sign-ins the audit log records: every one, until a
//! flood, and then a bounded number with the count of the rest, so that
//! password guessing can neither grow the log without bound nor slow
//! sign-in down.
//!
//! - Per client address, at most [`PER_ADDRESS`] failures a minute (UTC
//!   minutes) are written one by one; the rest are counted, and the count
//!   is carried by the address's next entry (`suppressed`), a failure or a
//!   sign-in.
//! - Over all addresses, at most [`OVERALL`] failures a minute are written
//!   one by one, so a guess from many addresses is bounded too.
//! - Counts of addresses that did not come back by the end of their minute
//!   are written together in one summary entry, at most one a minute,
//!   naming the [`SUMMARY_ADDRESSES`] largest. Addresses beyond
//!   [`MAX_ADDRESSES`] are not tracked and count in the summary only.
//!
//! So at most `OVERALL + 1` entries a minute, and every failure is counted
//! once: written, or in a count. The state is per node and in memory (a
//! restart loses the counts not yet written). Pure: the caller passes the
//! time.

use std::collections::HashMap;
use std::net::IpAddr;

/// Failures from one address written one by one per minute.
pub const PER_ADDRESS: u32 = 5;
/// Failures from all addresses written one by one per minute.
pub const OVERALL: u32 = 60;
/// Addresses whose counts are tracked at most.
pub const MAX_ADDRESSES: usize = 10_000;
/// Addresses a summary names at most (the largest counts).
pub const SUMMARY_ADDRESSES: usize = 20;

#[derive(Debug, Clone, Copy, Default)]
struct Address {
    minute: i64,
    written: u32,
    suppressed: u64,
}

/// What to do with one failed sign-in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Write its entry, carrying the count of the address's failures not
    /// written since its last entry.
    Write { suppressed: u64 },
    /// Only count it.
    Suppress,
}

/// Failures that were counted but not written, for addresses that did not
/// come back: written as one entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    pub total: u64,
    /// The largest counts, largest first.
    pub addresses: Vec<(IpAddr, u64)>,
    /// Addresses with a count that the list leaves out (or that were not
    /// tracked at all, counted in `total` only).
    pub more: usize,
}

/// The state: per-address counts and this minute's overall count.
#[derive(Debug, Default)]
pub struct SignInLog {
    minute: i64,
    written: u32,
    summarised: Option<i64>,
    addresses: HashMap<IpAddr, Address>,
    untracked: u64,
}

fn minute_of(now_secs: i64) -> i64 {
    now_secs.div_euclid(60)
}

impl SignInLog {
    /// Counts a failed sign-in from `ip` at `now_secs`.
    pub fn failure(&mut self, ip: IpAddr, now_secs: i64) -> Verdict {
        let minute = minute_of(now_secs);
        if minute != self.minute {
            self.minute = minute;
            self.written = 0;
        }
        if !self.addresses.contains_key(&ip) && self.addresses.len() >= MAX_ADDRESSES {
            self.addresses
                .retain(|_, a| a.minute >= minute || a.suppressed > 0);
            if self.addresses.len() >= MAX_ADDRESSES {
                self.untracked = self.untracked.saturating_add(1);
                return Verdict::Suppress;
            }
        }
        let a = self.addresses.entry(ip).or_default();
        if a.minute != minute {
            a.minute = minute;
            a.written = 0;
        }
        if a.written < PER_ADDRESS && self.written < OVERALL {
            a.written += 1;
            self.written += 1;
            Verdict::Write {
                suppressed: std::mem::take(&mut a.suppressed),
            }
        } else {
            a.suppressed = a.suppressed.saturating_add(1);
            Verdict::Suppress
        }
    }

    /// Takes the count of `ip`'s failures not yet written (for the entry
    /// of its sign-in).
    pub fn take(&mut self, ip: IpAddr) -> u64 {
        self.addresses
            .get_mut(&ip)
            .map_or(0, |a| std::mem::take(&mut a.suppressed))
    }

    /// The counts of addresses whose minute ended before `now_secs`'s, and
    /// of untracked ones, once a minute at most; they are cleared. Quiet
    /// addresses are forgotten.
    pub fn overdue(&mut self, now_secs: i64) -> Option<Summary> {
        let minute = minute_of(now_secs);
        if self.summarised == Some(minute) {
            return None;
        }
        let mut counts: Vec<(IpAddr, u64)> = Vec::new();
        self.addresses.retain(|ip, a| {
            if a.minute >= minute {
                return true;
            }
            if a.suppressed > 0 {
                counts.push((*ip, a.suppressed));
            }
            false
        });
        let untracked = std::mem::take(&mut self.untracked);
        if counts.is_empty() && untracked == 0 {
            return None;
        }
        self.summarised = Some(minute);
        counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let total = counts
            .iter()
            .map(|c| c.1)
            .fold(untracked, u64::saturating_add);
        let more = counts.len().saturating_sub(SUMMARY_ADDRESSES) + usize::from(untracked > 0);
        counts.truncate(SUMMARY_ADDRESSES);
        Some(Summary {
            total,
            addresses: counts,
            more,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(n: u32) -> IpAddr {
        IpAddr::from(n.to_be_bytes())
    }

    #[test]
    fn an_address_writes_five_a_minute_and_its_next_entry_carries_the_rest() {
        let mut log = SignInLog::default();
        let verdicts: Vec<Verdict> = (0..8).map(|_| log.failure(ip(1), 120)).collect();
        assert_eq!(verdicts[..5], [Verdict::Write { suppressed: 0 }; 5]);
        assert_eq!(verdicts[5..], [Verdict::Suppress; 3]);
        assert_eq!(log.failure(ip(2), 130), Verdict::Write { suppressed: 0 });
        // The next minute: the three are carried by the next entry.
        assert_eq!(log.failure(ip(1), 180), Verdict::Write { suppressed: 3 });
        assert_eq!(log.failure(ip(1), 181), Verdict::Write { suppressed: 0 });
        assert_eq!(log.overdue(181), None, "nothing left to summarise");
    }

    #[test]
    fn a_sign_in_takes_its_addresses_count() {
        let mut log = SignInLog::default();
        for _ in 0..7 {
            log.failure(ip(1), 0);
        }
        assert_eq!(log.take(ip(1)), 2);
        assert_eq!(log.take(ip(1)), 0);
        assert_eq!(log.take(ip(9)), 0);
    }

    #[test]
    fn many_addresses_share_the_overall_limit_and_the_rest_is_summarised_once() {
        let mut log = SignInLog::default();
        let mut written = 0;
        for n in 0..200 {
            if let Verdict::Write { .. } = log.failure(ip(n), 60) {
                written += 1;
            }
        }
        assert_eq!(written, OVERALL);
        assert_eq!(log.overdue(100), None, "not before the minute ends");
        let s = log.overdue(125).expect("a summary");
        assert_eq!(s.total, 200 - u64::from(OVERALL));
        assert_eq!(s.addresses.len(), SUMMARY_ADDRESSES);
        assert_eq!(s.more, 140 - SUMMARY_ADDRESSES);
        assert_eq!(log.overdue(126), None, "one a minute, and counted once");
    }

    #[test]
    fn every_failure_is_written_or_counted_exactly_once() {
        let mut log = SignInLog::default();
        let (mut written, mut carried, mut summarised) = (0u64, 0u64, 0u64);
        for t in 0..600_i64 {
            for n in 0..(t % 7) as u32 {
                match log.failure(ip(n % 3), t) {
                    Verdict::Write { suppressed } => {
                        written += 1;
                        carried += suppressed;
                    }
                    Verdict::Suppress => {}
                }
            }
            if let Some(s) = log.overdue(t) {
                summarised += s.total;
            }
        }
        summarised += log.overdue(10_000).map_or(0, |s| s.total);
        let attempts: u64 = (0..600_i64).map(|t| (t % 7) as u64).sum();
        assert_eq!(written + carried + summarised, attempts);
        assert!(written <= 10 * u64::from(PER_ADDRESS) * 3);
    }

    #[test]
    fn tracking_is_bounded_and_the_untracked_are_counted() {
        let mut log = SignInLog::default();
        for n in 0..(MAX_ADDRESSES as u32 + 10) {
            for _ in 0..(PER_ADDRESS + 1) {
                log.failure(ip(n), 0);
            }
        }
        assert_eq!(log.addresses.len(), MAX_ADDRESSES);
        let s = log.overdue(60).expect("summary");
        let tracked = MAX_ADDRESSES as u64 * u64::from(PER_ADDRESS + 1) - u64::from(OVERALL);
        assert_eq!(s.total, tracked + 10 * u64::from(PER_ADDRESS + 1));
    }
}
