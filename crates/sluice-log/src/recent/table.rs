//! A set of 64-bit keys, each tagged with the generation that holds it:
//! the memory behind [`super::Recent`]. Pure.
//!
//! # Layout
//! Buckets of one cache line: seven keys and their seven tags (tag 0 marks
//! a free slot). A key lives in one of two buckets, chosen by the two
//! halves of its hash under keys drawn at random for the table (SipHash,
//! std's `RandomState`): a sender who can choose message ids still cannot
//! choose buckets, and so cannot crowd one pair to make the table grow.
//! It goes to the emptier of its two. A lookup reads two
//! cache lines, whatever the table's size, and compares whole keys, so the
//! table itself never takes one key for another.
//!
//! Two choices of seven slots fill a table to about 90 % before a key finds
//! both of its buckets full; the table doubles at 80 % or at the first such
//! key, and halves when a generation's removal leaves it under 20 %. So a
//! key costs about 9 bytes at best and 23 just after a doubling
//! ([`Table::bytes`]).
//!
//! # Removal
//! Only a whole generation leaves ([`Table::remove_tag`]), by one sweep
//! over the buckets: that is what lets a freed slot take any key without
//! breaking another key's lookup (no probe sequences, no tombstones).

use std::hash::{BuildHasher, RandomState};

/// Keys per bucket.
const SLOTS: usize = 7;
/// The smallest table, in buckets (a power of two).
const MIN_BUCKETS: usize = 16;
/// The table doubles once it is this full (in tenths)...
const GROW_AT: usize = 8;
/// ...and halves once a removal leaves it under this (in tenths).
const SHRINK_BELOW: usize = 2;

#[derive(Clone, Copy, Default)]
#[repr(C, align(64))]
struct Bucket {
    keys: [u64; SLOTS],
    tags: [u8; SLOTS],
    _pad: u8,
}

impl Bucket {
    fn holds(&self, key: u64) -> bool {
        (0..SLOTS).any(|i| self.tags[i] != 0 && self.keys[i] == key)
    }

    fn used(&self) -> usize {
        self.tags.iter().filter(|&&t| t != 0).count()
    }

    fn put(&mut self, key: u64, tag: u8) -> bool {
        match self.tags.iter().position(|&t| t == 0) {
            Some(i) => {
                self.keys[i] = key;
                self.tags[i] = tag;
                true
            }
            None => false,
        }
    }
}

/// Tagged 64-bit keys in buckets of one cache line.
pub(super) struct Table {
    buckets: Vec<Bucket>,
    len: usize,
    hasher: RandomState,
}

impl Default for Table {
    fn default() -> Self {
        Table::with_buckets(MIN_BUCKETS, RandomState::new())
    }
}

impl Table {
    fn with_buckets(buckets: usize, hasher: RandomState) -> Self {
        Table {
            buckets: vec![Bucket::default(); buckets.max(MIN_BUCKETS).next_power_of_two()],
            len: 0,
            hasher,
        }
    }

    fn homes(&self, key: u64) -> (usize, usize) {
        let hash = self.hasher.hash_one(key);
        let mask = self.buckets.len() as u64 - 1;
        // The two halves of the hash: independent choices for any table of
        // up to 2^32 buckets.
        ((hash & mask) as usize, ((hash >> 32) & mask) as usize)
    }

    fn slots(&self) -> usize {
        self.buckets.len() * SLOTS
    }

    /// How many keys the table holds.
    pub(super) fn len(&self) -> usize {
        self.len
    }

    /// The memory of the table's buckets.
    pub(super) fn bytes(&self) -> usize {
        self.buckets.len() * std::mem::size_of::<Bucket>()
    }

    /// Whether the table holds `key`, under any tag.
    pub(super) fn contains(&self, key: u64) -> bool {
        let (a, b) = self.homes(key);
        self.buckets[a].holds(key) || self.buckets[b].holds(key)
    }

    /// Adds `key` (not held yet) under `tag` (not 0), growing the table as
    /// it must.
    pub(super) fn insert(&mut self, key: u64, tag: u8) {
        debug_assert_ne!(tag, 0, "tag 0 marks a free slot");
        if (self.len + 1) * 10 > self.slots() * GROW_AT {
            self.resize(self.buckets.len() * 2);
        }
        while !self.place(key, tag) {
            self.resize(self.buckets.len() * 2);
        }
        self.len += 1;
    }

    /// Puts `key` in the emptier of its buckets; false when both are full.
    fn place(&mut self, key: u64, tag: u8) -> bool {
        let (a, b) = self.homes(key);
        let first = if self.buckets[b].used() < self.buckets[a].used() {
            b
        } else {
            a
        };
        let second = if first == a { b } else { a };
        self.buckets[first].put(key, tag) || self.buckets[second].put(key, tag)
    }

    /// Removes every key held under `tag`; returns how many.
    pub(super) fn remove_tag(&mut self, tag: u8) -> usize {
        let mut removed = 0;
        for bucket in &mut self.buckets {
            for t in &mut bucket.tags {
                if *t == tag {
                    *t = 0;
                    removed += 1;
                }
            }
        }
        self.len -= removed;
        if self.buckets.len() > MIN_BUCKETS && self.len * 10 < self.slots() * SHRINK_BELOW {
            self.resize(self.buckets.len() / 2);
        }
        removed
    }

    /// Moves every key to a table of at least `buckets` buckets, doubling
    /// again should a key find no room there.
    fn resize(&mut self, mut buckets: usize) {
        'sizes: loop {
            let mut next = Table::with_buckets(buckets, self.hasher.clone());
            for bucket in &self.buckets {
                for i in 0..SLOTS {
                    if bucket.tags[i] == 0 {
                        continue;
                    }
                    if !next.place(bucket.keys[i], bucket.tags[i]) {
                        buckets = next.buckets.len() * 2;
                        continue 'sizes;
                    }
                    next.len += 1;
                }
            }
            *self = next;
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Keys in a plain sequence: the table's hash spreads them.
    fn spread(i: u64) -> u64 {
        i << 8
    }

    #[test]
    fn a_bucket_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<Bucket>(), 64);
        assert_eq!(std::mem::align_of::<Bucket>(), 64);
    }

    #[test]
    fn holds_every_key_it_was_given_through_growth() {
        let mut t = Table::default();
        for i in 0..100_000 {
            t.insert(spread(i), 1 + (i % 3) as u8);
        }
        assert_eq!(t.len(), 100_000);
        assert!((0..100_000).all(|i| t.contains(spread(i))));
        assert!(!(100_000..110_000).any(|i| t.contains(spread(i))));
        let per_key = t.bytes() as f64 / t.len() as f64;
        assert!(per_key < 24.0, "{per_key} bytes a key");
    }

    #[test]
    fn keys_with_equal_low_bits_are_told_apart() {
        let mut t = Table::default();
        t.insert(0x0000_0001_0000_0005, 1);
        assert!(t.contains(0x0000_0001_0000_0005));
        assert!(!t.contains(0x0000_0002_0000_0005));
        assert!(!t.contains(0x0000_0001_0000_0006));
        t.insert(0, 2);
        assert!(t.contains(0), "a key of zero is a key like any other");
    }

    #[test]
    fn removing_a_tag_frees_its_keys_and_keeps_the_others() {
        let mut t = Table::default();
        for i in 0..50_000 {
            t.insert(spread(i), if i < 40_000 { 1 } else { 2 });
        }
        let big = t.bytes();
        assert_eq!(t.remove_tag(1), 40_000);
        assert_eq!(t.len(), 10_000);
        assert!((40_000..50_000).all(|i| t.contains(spread(i))));
        assert!(!(0..40_000).any(|i| t.contains(spread(i))));
        assert!(t.bytes() < big, "the table shrank: {} of {big}", t.bytes());
        for i in 0..40_000 {
            t.insert(spread(i), 3);
        }
        assert_eq!(t.len(), 50_000);
        assert!((0..50_000).all(|i| t.contains(spread(i))));
    }
}
