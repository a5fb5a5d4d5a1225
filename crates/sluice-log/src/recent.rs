//! Which calls a consumer has already read lately, per partition: how the
//! Kafka shape drops a client's retry of a call the log already holds.
//!
//! A client that did not hear the `200` sends the call again with the same
//! `messageId`, and ingest appends it again. The record's key is the
//! source and the person, so the retry lands in the same partition as the
//! first copy, and the one consumer reading that partition sees both, in
//! order. It remembers a keyed hash of (source, messageId) for each record
//! within the deduplication window (by the time ingest accepted it) and
//! drops a record whose hash it already holds.
//!
//! The memory is in the consumer only: a partition that moves to another
//! node (a crash, a rebalance) starts there with nothing remembered, so a
//! retry whose first copy the old owner read is delivered again. At most
//! `cap` hashes are kept per node (about 40 bytes each); past that the
//! oldest are forgotten first, which shortens the window under load.
//! Pure bookkeeping.

use std::collections::{HashMap, HashSet, VecDeque};

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

    /// Forgets partitions not in `assigned` (read elsewhere now).
    pub fn keep(&mut self, assigned: &[i32]) {
        self.parts.retain(|id, part| {
            let kept = assigned.contains(id);
            if !kept {
                self.held -= part.order.len();
            }
            kept
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn partitions_remember_apart_and_a_moved_one_is_forgotten() {
        let mut r = Recent::new(1_000, 100);
        assert!(r.first(1, 7, 0));
        assert!(r.first(2, 7, 0), "same key, other partition");
        r.keep(&[2]);
        assert_eq!(r.held, 1);
        assert!(r.first(1, 7, 10), "partition 1 starts afresh");
        assert!(!r.first(2, 7, 10));
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
