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
//! - [`Recent`]: the memory. At most `cap` keys a node (about 40 bytes
//!   each); past that the oldest are forgotten first, which shortens the
//!   window under load. A partition that comes to the node starts afresh
//!   ([`Recent::forget`]) from the keys saved for it: keys kept from an
//!   earlier time here could be of calls read but given up when the
//!   partition went, which are read again and must be sent.
//! - [`Unsaved`]: the keys read since the partition's last commit. The
//!   consumer saves those below the offset it commits
//!   (`sluice_store::SeenStore`) before committing it, and the node that
//!   takes the partition over loads them with [`Recent::remember`]: the
//!   memory survives `kill -9` and rebalances.
//!
//! Pure bookkeeping.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

use sha2::{Digest, Sha256};

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
    cap: usize,
    held: usize,
    parts: HashMap<i32, Part>,
}

#[derive(Debug, Default)]
struct Part {
    seen: HashSet<u64>,
    /// (accepted at, hash), oldest first.
    order: VecDeque<(i64, u64)>,
}

impl Recent {
    /// Remembers calls for `window_ms` after they were accepted, at most
    /// `cap` of them in all.
    pub fn new(window_ms: i64, cap: usize) -> Self {
        Recent {
            window_ms,
            cap: cap.max(1),
            held: 0,
            parts: HashMap::new(),
        }
    }

    /// Whether the call `key` (a hash of source and messageId), accepted at
    /// `at_ms`, is the first of its key in `partition` within the window;
    /// either way it is remembered from now on.
    pub fn first(&mut self, partition: i32, key: u64, at_ms: i64) -> bool {
        let horizon = at_ms.saturating_sub(self.window_ms);
        let part = self.parts.entry(partition).or_default();
        while let Some(&(at, old)) = part.order.front() {
            if at >= horizon {
                break;
            }
            part.order.pop_front();
            part.seen.remove(&old);
            self.held -= 1;
        }
        if !part.seen.insert(key) {
            return false;
        }
        part.order.push_back((at_ms, key));
        self.held += 1;
        if self.held > self.cap {
            self.forget_oldest();
        }
        true
    }

    /// Drops the oldest remembered call of the partition holding the most.
    fn forget_oldest(&mut self) {
        let Some(part) = self.parts.values_mut().max_by_key(|p| p.order.len()) else {
            return;
        };
        if let Some((_, old)) = part.order.pop_front() {
            part.seen.remove(&old);
            self.held -= 1;
        }
    }

    /// Forgets what was read in `partition`.
    pub fn forget(&mut self, partition: i32) {
        if let Some(part) = self.parts.remove(&partition) {
            self.held -= part.order.len();
        }
    }

    /// Remembers `key`, accepted at `at_ms`, in `partition`: a key saved by
    /// the partition's previous owner. Give a partition's saved keys oldest
    /// first.
    pub fn remember(&mut self, partition: i32, key: u64, at_ms: i64) {
        let _ = self.first(partition, key, at_ms);
    }
}

/// The keys of one partition saved as one slice: those read below `upto`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slice {
    /// The partition.
    pub partition: i32,
    /// The offset committed with this slice.
    pub upto: i64,
    /// When ingest accepted the newest of the calls (unix ms).
    pub newest_at: i64,
    /// Their keys, in offset order.
    pub keys: Vec<u64>,
}

/// Keys read and not yet saved, per partition, in offset order.
#[derive(Debug, Default)]
pub struct Unsaved {
    parts: BTreeMap<i32, VecDeque<(i64, i64, u64)>>,
}

impl Unsaved {
    /// The record at `offset` of `partition`, accepted at `at_ms`, has key
    /// `key`. Offsets of a partition come in increasing order.
    pub fn note(&mut self, partition: i32, offset: i64, at_ms: i64, key: u64) {
        self.parts
            .entry(partition)
            .or_default()
            .push_back((offset, at_ms, key));
    }

    /// For each `(partition, position)` about to be committed, the slice of
    /// keys noted below `position`; partitions with none are left out.
    pub fn below(&self, positions: &[(i32, i64)]) -> Vec<Slice> {
        positions
            .iter()
            .filter_map(|&(partition, upto)| {
                let noted = self.parts.get(&partition)?;
                let below: Vec<&(i64, i64, u64)> =
                    noted.iter().take_while(|(o, ..)| *o < upto).collect();
                let newest_at = below.iter().map(|(_, at, _)| *at).max()?;
                Some(Slice {
                    partition,
                    upto,
                    newest_at,
                    keys: below.iter().map(|(.., k)| *k).collect(),
                })
            })
            .collect()
    }

    /// `positions` are saved and committed: forgets the keys below them.
    pub fn saved(&mut self, positions: &[(i32, i64)]) {
        for &(partition, upto) in positions {
            if let Some(noted) = self.parts.get_mut(&partition) {
                while noted.front().is_some_and(|(o, ..)| *o < upto) {
                    noted.pop_front();
                }
            }
        }
    }

    /// Forgets partitions not in `assigned`: the new owner reads their
    /// unsaved calls again from the last commit.
    pub fn keep(&mut self, assigned: &[i32]) {
        self.parts.retain(|id, _| assigned.contains(id));
    }

    /// Forgets what was noted in `partition`.
    pub fn forget(&mut self, partition: i32) {
        self.parts.remove(&partition);
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
    fn only_keys_below_the_committed_position_are_saved() {
        let mut u = Unsaved::default();
        u.note(0, 10, 100, 1);
        u.note(0, 11, 300, 2);
        u.note(0, 12, 200, 3);
        u.note(1, 5, 50, 9);
        let slices = u.below(&[(0, 12), (2, 4)]);
        assert_eq!(
            slices,
            vec![Slice {
                partition: 0,
                upto: 12,
                newest_at: 300,
                keys: vec![1, 2]
            }],
            "12 is not below the position: it may still be in flight"
        );
        u.saved(&[(0, 12)]);
        assert_eq!(u.below(&[(0, 13)])[0].keys, vec![3]);
        u.keep(&[0]);
        assert!(u.below(&[(1, 6)]).is_empty(), "partition 1 moved away");
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
}
