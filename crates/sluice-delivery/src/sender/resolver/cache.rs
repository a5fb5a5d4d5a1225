//! How long a lookup's outcome is reused, per host. Pure: the caller says
//! what time it is.
//!
//! Why cache failures: a destination whose name does not resolve is tried
//! as often as its deliveries are (up to `concurrency_per_destination`
//! sends at once, times its URLs). Without a memory of the failure each
//! send asks the name servers again; with it, one lookup per host answers
//! every send for [`FAILURE_TTL`]. Short, so a record that was just added
//! (or a name server that recovered) is seen within seconds.
//!
//! Why bound successes: an answer is reused for its TTL, but never longer
//! than [`SUCCESS_TTL_CAP`], so an edited `/etc/hosts` entry (whose TTL is
//! "forever") or a record with a long TTL is picked up within a minute.
//! Reusing an answer never skips the network guard: the addresses are
//! checked on every connection whatever their age.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::LookupError;

/// How long a failed lookup is answered from memory.
pub const FAILURE_TTL: Duration = Duration::from_secs(5);

/// The longest a successful answer is reused, whatever its TTL.
pub const SUCCESS_TTL_CAP: Duration = Duration::from_secs(60);

/// Hosts remembered at most; beyond it expired entries go, then all.
pub const MAX_HOSTS: usize = 4096;

/// A lookup's outcome as remembered.
pub type Outcome = Result<Arc<[IpAddr]>, LookupError>;

#[derive(Debug)]
struct Entry {
    outcome: Outcome,
    expires: Instant,
}

/// Outcomes by host name (lower case, without a trailing dot).
#[derive(Debug, Default)]
pub struct DnsCache {
    entries: HashMap<String, Entry>,
}

impl DnsCache {
    /// The remembered outcome for `host`, if it has not expired at `now`.
    pub fn get(&self, host: &str, now: Instant) -> Option<Outcome> {
        self.entries
            .get(&key(host))
            .filter(|e| now < e.expires)
            .map(|e| e.outcome.clone())
    }

    /// Remembers `outcome` for `host`, looked up at `now`; `ttl` is the
    /// answer's own time to live, when it had one.
    pub fn insert(&mut self, host: &str, outcome: Outcome, ttl: Option<Duration>, now: Instant) {
        let keep = lifetime(&outcome, ttl);
        if keep.is_zero() {
            self.entries.remove(&key(host));
            return;
        }
        if self.entries.len() >= MAX_HOSTS {
            self.entries.retain(|_, e| now < e.expires);
            if self.entries.len() >= MAX_HOSTS {
                self.entries.clear();
            }
        }
        self.entries.insert(
            key(host),
            Entry {
                outcome,
                expires: now + keep,
            },
        );
    }

    /// Hosts remembered, expired or not.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// How long `outcome` is kept: failures [`FAILURE_TTL`]; successes their
/// TTL (none given: not kept) up to [`SUCCESS_TTL_CAP`].
pub fn lifetime(outcome: &Outcome, ttl: Option<Duration>) -> Duration {
    match outcome {
        Err(_) => FAILURE_TTL,
        Ok(_) => ttl.unwrap_or(Duration::ZERO).min(SUCCESS_TTL_CAP),
    }
}

/// `Hooks.Example.` and `hooks.example` are one host.
fn key(host: &str) -> String {
    host.trim_end_matches('.').to_ascii_lowercase()
}

#[cfg(test)]
#[path = "cache_tests.rs"]
mod tests;
