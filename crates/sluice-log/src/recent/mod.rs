//! Which calls a consumer has already read lately, per partition: how the
//! Kafka shape drops a client's retry of a call the log already holds.
//!
//! A client that did not hear the `200` sends the call again with the same
//! `messageId`, and ingest appends it again. The record's key is the
//! source and the person, so the retry lands in the same partition as the
//! first copy, and the one consumer reading that partition sees both, in
//! order. It remembers the [`key`] of (source, messageId) of each record
//! within the deduplication window (by the time ingest accepted it) and
//! drops a record whose key it already holds.
//!
//! - [`Recent`]: the memory. Each partition's keys sit in one table
//!   (`table.rs`: two cache lines a lookup, about 9 to 23 bytes a key),
//!   tagged with the generation that took them: a slice of acceptance time
//!   1/24 of the window wide, or fewer keys under the cap. A generation
//!   leaves whole once its newest call is older than the window, so a call
//!   is remembered for at least the window and at most 1/24 of it longer.
//!   At most `cap` keys a node: past that the oldest generation of the
//!   partition holding most goes first, which shortens the window under
//!   load ([`Recent::held`], [`Recent::bytes`] say what it costs). A
//!   partition that comes to the node starts afresh ([`Recent::forget`])
//!   from the keys saved for it: keys kept from an earlier time here could
//!   be of calls read but given up when the partition went, which are read
//!   again and must be sent.
//! - [`Unsaved`]: the keys read since the partition's last commit. The
//!   consumer saves those below the offset it commits
//!   (`sluice_store::SeenStore`) before committing it, and the node that
//!   takes the partition over loads them with [`Recent::remember`]: the
//!   memory survives `kill -9` and rebalances.
//!
//! Pure bookkeeping.

mod table;
mod unsaved;

use std::collections::{HashMap, VecDeque};

use sha2::{Digest, Sha256};

use table::Table;
pub use unsaved::{Slice, Unsaved};

/// How many generations the window is cut into by time.
const GENERATIONS: i64 = 24;
/// The most generations a partition keeps; past that its oldest goes.
const MAX_GENERATIONS: usize = 64;

/// The key of a call: the first 8 bytes of SHA-256(source id, NUL,
/// messageId). The same on every node, so saved keys mean the same to the
/// node that loads them. Two calls of one source share a key only by a
/// 64-bit collision (about one in 4 x 10^7 within a million keys), which drops
/// the later one; a sender can arrange that only among its own calls.
pub fn key(source_id: &str, message_id: &str) -> u64 {
    let digest = Sha256::new()
        .chain_update(source_id.as_bytes())
        .chain_update([0u8])
        .chain_update(message_id.as_bytes())
        .finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(first)
}

/// Recently read calls, per partition.
#[derive(Debug)]
pub struct Recent {
    window_ms: i64,
    /// The acceptance time one generation spans at most.
    width_ms: i64,
    cap: usize,
    held: usize,
    /// Calls forgotten inside the window, to stay under the cap.
    forced: u64,
    parts: HashMap<i32, Part>,
}

/// The keys of one partition's calls within the window.
#[derive(Default)]
struct Part {
    table: Table,
    /// Oldest first; new keys go to the last.
    generations: VecDeque<Generation>,
    /// The tag the next generation tries first.
    next_tag: u8,
}

impl std::fmt::Debug for Part {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Part")
            .field("keys", &self.table.len())
            .field("generations", &self.generations.len())
            .finish()
    }
}

/// The keys a partition took in one slice of time.
#[derive(Debug)]
struct Generation {
    tag: u8,
    started_at: i64,
    newest_at: i64,
    keys: usize,
}

impl Part {
    /// Drops the generations whose newest call was accepted before
    /// `horizon`, oldest first; returns how many keys went.
    fn expire(&mut self, horizon: i64) -> usize {
        let mut gone = 0;
        while self
            .generations
            .front()
            .is_some_and(|g| g.newest_at < horizon)
        {
            gone += self.drop_oldest();
        }
        gone
    }

    /// Drops the oldest generation; returns how many keys went.
    fn drop_oldest(&mut self) -> usize {
        match self.generations.pop_front() {
            Some(g) => self.table.remove_tag(g.tag),
            None => 0,
        }
    }

    /// A tag no live generation carries (1 to 255: far more than
    /// [`MAX_GENERATIONS`]).
    fn free_tag(&mut self) -> u8 {
        loop {
            self.next_tag = self.next_tag.checked_add(1).unwrap_or(1);
            let tag = self.next_tag;
            if !self.generations.iter().any(|g| g.tag == tag) {
                return tag;
            }
        }
    }
}

impl Recent {
    /// Remembers calls for `window_ms` after they were accepted, at most
    /// `cap` of them in all.
    pub fn new(window_ms: i64, cap: usize) -> Self {
        Recent {
            window_ms,
            width_ms: (window_ms / GENERATIONS).max(1),
            cap: cap.max(1),
            held: 0,
            forced: 0,
            parts: HashMap::new(),
        }
    }

    /// Whether the call `key` (a hash of source and messageId), accepted at
    /// `at_ms`, is the first of its key in `partition` within the window;
    /// either way it is remembered from now on.
    pub fn first(&mut self, partition: i32, key: u64, at_ms: i64) -> bool {
        // Under the cap, a generation is small enough that dropping one
        // forgets a small share of what the partitions hold.
        let seal_at = (self.cap / (2 * GENERATIONS as usize * (self.parts.len() + 1))).max(1);
        let part = self.parts.entry(partition).or_default();
        self.held -= part.expire(at_ms.saturating_sub(self.window_ms));
        if part.table.contains(key) {
            return false;
        }
        let open = part.generations.back().is_none_or(|g| {
            at_ms >= g.started_at.saturating_add(self.width_ms) || g.keys >= seal_at
        });
        if open {
            if part.generations.len() >= MAX_GENERATIONS {
                let gone = part.drop_oldest();
                self.held -= gone;
                self.forced += gone as u64;
            }
            let tag = part.free_tag();
            part.generations.push_back(Generation {
                tag,
                started_at: at_ms,
                newest_at: at_ms,
                keys: 0,
            });
        }
        let Some(generation) = part.generations.back_mut() else {
            return true;
        };
        generation.keys += 1;
        generation.newest_at = generation.newest_at.max(at_ms);
        part.table.insert(key, generation.tag);
        self.held += 1;
        if self.held > self.cap {
            self.forget_oldest();
        }
        true
    }

    /// Drops the oldest generation of the partition holding the most.
    fn forget_oldest(&mut self) {
        if let Some(part) = self.parts.values_mut().max_by_key(|p| p.table.len()) {
            let gone = part.drop_oldest();
            self.held -= gone;
            self.forced += gone as u64;
        }
    }

    /// Forgets what was read in `partition`.
    pub fn forget(&mut self, partition: i32) {
        if let Some(part) = self.parts.remove(&partition) {
            self.held -= part.table.len();
        }
    }

    /// Remembers `key`, accepted at `at_ms`, in `partition`: a key saved by
    /// the partition's previous owner. Give a partition's saved keys oldest
    /// first.
    pub fn remember(&mut self, partition: i32, key: u64, at_ms: i64) {
        let _ = self.first(partition, key, at_ms);
    }

    /// How many calls are remembered.
    pub fn held(&self) -> usize {
        self.held
    }

    /// The memory of the remembered calls' tables, in bytes.
    pub fn bytes(&self) -> usize {
        self.parts.values().map(|p| p.table.bytes()).sum()
    }

    /// How many calls were forgotten before the window passed, to keep
    /// under the cap: while this grows the window is shorter than set.
    pub fn forced(&self) -> u64 {
        self.forced
    }

    /// When the oldest call still remembered in every partition was
    /// accepted, at the latest (unix ms): how far back the memory reaches
    /// everywhere. `None` when nothing is remembered.
    pub fn reaches_back_to(&self) -> Option<i64> {
        self.parts
            .values()
            .filter_map(|p| p.generations.front().map(|g| g.started_at))
            .max()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partition_forgotten_takes_a_call_read_before_as_new() {
        let mut r = Recent::new(1_000, 10);
        assert!(r.first(0, 7, 100));
        assert!(r.first(1, 8, 100));
        r.forget(0);
        assert!(r.first(0, 7, 200), "read before, given up, read again");
        assert!(!r.first(1, 8, 200), "other partitions keep theirs");
        assert_eq!(r.held, 2);
    }

    #[test]
    fn a_repeat_within_the_window_is_dropped_and_one_after_it_is_not() {
        let mut r = Recent::new(1_000, 100);
        assert!(r.first(0, 7, 0));
        assert!(!r.first(0, 7, 999), "within the window");
        assert!(r.first(0, 8, 1_500), "another call");
        assert!(r.first(0, 7, 2_100), "past the window: forgotten");
        assert_eq!(r.held, 2);
    }

    #[test]
    fn partitions_remember_apart() {
        let mut r = Recent::new(1_000, 100);
        assert!(r.first(1, 7, 0));
        assert!(r.first(2, 7, 0), "same key, other partition");
        assert!(!r.first(1, 7, 10));
    }

    #[test]
    fn remembered_keys_drop_the_retries_they_name() {
        let mut r = Recent::new(1_000, 100);
        r.remember(3, key("src", "m-1"), 0);
        assert!(!r.first(3, key("src", "m-1"), 500));
        assert!(r.first(3, key("src", "m-2"), 500));
        assert!(
            r.first(3, key("other", "m-1"), 500),
            "the source is part of the key"
        );
    }

    #[test]
    fn past_the_cap_the_oldest_are_forgotten_first() {
        let mut r = Recent::new(i64::MAX, 3);
        for key in 0..4 {
            assert!(r.first(0, key, 0));
        }
        assert_eq!(r.held, 3);
        assert!(r.first(0, 0, 0), "the oldest went first");
        assert!(!r.first(0, 3, 0), "the newest stays");
    }

    #[test]
    fn a_call_is_remembered_for_the_window_and_at_most_a_24th_longer() {
        let mut r = Recent::new(24_000, 1_000_000);
        assert!(r.first(0, 7, 0));
        for at in (1..24_000).step_by(500) {
            assert!(r.first(0, 1_000 + at as u64, at), "other calls");
        }
        assert!(!r.first(0, 7, 24_000), "the window's last moment");
        assert!(r.first(0, 7, 25_001), "past the window and its 24th");
    }

    #[test]
    fn memory_goes_back_as_the_calls_read_pass_the_window() {
        let mut r = Recent::new(1_000, 1_000_000);
        for k in 0..10_000 {
            assert!(r.first(0, k, k as i64 / 20));
        }
        assert_eq!(r.held(), 10_000);
        assert_eq!(r.reaches_back_to(), Some(0));
        let full = r.bytes();
        assert!(r.first(0, 20_000, 1_300));
        assert!(r.held() < 10_000 && r.held() > 1, "{} held", r.held());
        let back = r.reaches_back_to().unwrap_or(0);
        assert!((300 - 1_000 / 24..=300).contains(&back), "{back}");
        assert!(r.first(0, 20_001, 10_000));
        assert_eq!(r.held(), 1, "only the newest call is within the window");
        assert!(r.bytes() < full / 4, "{} of {full} bytes", r.bytes());
        assert_eq!(r.forced(), 0, "all of it expired");
    }

    #[test]
    fn a_backlog_read_long_after_keeps_its_window_by_acceptance_time() {
        // Calls accepted an hour before they are read, 1 s apart, with a
        // window of 5 s: the memory follows the calls' times, not the clock.
        let mut r = Recent::new(5_000, 1_000_000);
        assert!(r.first(0, 1, 0));
        assert!(r.first(0, 2, 1_000));
        assert!(!r.first(0, 1, 4_000), "a retry 4 s after its first copy");
        assert!(
            r.first(0, 1, 6_000),
            "one 6 s after: past the window and its 24th"
        );
    }

    #[test]
    fn under_the_cap_the_newest_calls_of_every_partition_stay() {
        let mut r = Recent::new(i64::MAX, 100_000);
        for k in 0..400_000u64 {
            assert!(r.first((k % 16) as i32, k, 0));
            assert!(r.held() <= 100_000);
        }
        assert!(r.held() > 90_000, "{} held", r.held());
        assert_eq!(r.forced() as usize, 400_000 - r.held());
        assert!((390_000..400_000).all(|k| !r.first((k % 16) as i32, k, 0)));
        let per_key = r.bytes() as f64 / r.held() as f64;
        assert!(per_key < 24.0, "{per_key} bytes a call");
    }
}
