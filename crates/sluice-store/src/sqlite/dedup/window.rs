//! The in-memory window of committed (source, messageId) pairs: pure, no
//! I/O. See the module's notes (`mod.rs`) for how the writer uses it.

use std::collections::{HashSet, VecDeque};
use std::hash::{BuildHasher, BuildHasherDefault, Hasher, RandomState};
use std::time::Duration;

/// How many generations a window is cut into: an id is remembered for at
/// least the window and at most 1/24 of it longer (one hour of a day).
pub(super) const GENERATIONS: i64 = 24;

/// Bytes a set spends per bucket: the 8-byte key and its control byte.
const BUCKET_BYTES: usize = 9;

/// The committed ids of one slice of time, `[start, start + width)`, and
/// the seqs they were stored under (for the exact check).
struct Generation {
    start: i64,
    keys: HashSet<u64, BuildHasherDefault<PassThrough>>,
    lowest_seq: i64,
    highest_seq: i64,
}

/// The set of (source, messageId) hashes committed within the window.
pub(crate) struct Window {
    span: i64,
    width: i64,
    /// Oldest first; starts are multiples of `width`, ascending.
    generations: VecDeque<Generation>,
    /// Keys inserted since the last commit, with their generation's start,
    /// so that a rollback can take them out again.
    journal: Vec<(i64, u64)>,
    /// Random per process: nobody can choose ids that collide on purpose,
    /// and nothing is persisted, so the hash may differ between runs.
    hasher: RandomState,
}

impl Window {
    /// A window remembering ids for `span` (at least 1 ms).
    pub(crate) fn new(span: Duration) -> Window {
        let span = i64::try_from(span.as_millis()).unwrap_or(i64::MAX).max(1);
        Window {
            span,
            width: (span / GENERATIONS).max(1),
            generations: VecDeque::new(),
            journal: Vec::new(),
            hasher: RandomState::new(),
        }
    }

    /// The key of a source's message id.
    pub(crate) fn key(&self, source_id: &str, message_id: &str) -> u64 {
        self.hasher.hash_one((source_id, message_id))
    }

    /// The earliest receive time (unix ms) whose ids are still remembered
    /// at `now`: the start of the generation holding `now - span`.
    pub(crate) fn horizon(&self, now: i64) -> i64 {
        let edge = now.saturating_sub(self.span);
        edge - edge.rem_euclid(self.width)
    }

    /// Drops the generations wholly older than the window at `now`.
    pub(crate) fn expire(&mut self, now: i64) {
        let horizon = self.horizon(now);
        while self.generations.front().is_some_and(|g| g.start < horizon) {
            self.generations.pop_front();
        }
    }

    /// The seqs to search for `key`'s event: from the lowest to the highest
    /// seq of the generations holding it; `None` when none does (certainly
    /// not a duplicate).
    pub(crate) fn seqs_of(&self, key: u64) -> Option<(i64, i64)> {
        self.generations
            .iter()
            .filter(|g| g.keys.contains(&key))
            .map(|g| (g.lowest_seq, g.highest_seq))
            .reduce(|(lo, hi), (l, h)| (lo.min(l), hi.max(h)))
    }

    /// Records `key`, stored as `seq` and received at `at` (unix ms).
    pub(crate) fn insert(&mut self, key: u64, at: i64, seq: i64) {
        let start = at - at.rem_euclid(self.width);
        let at = match self.generations.iter().rposition(|g| g.start <= start) {
            Some(i) if self.generations[i].start == start => i,
            found => {
                let i = found.map_or(0, |i| i + 1);
                // Sized like the slice before it: traffic changes slowly, so
                // the table rarely grows, and a growth's rehash (tens of MB
                // on the writer thread) and the outgrown tables it leaves
                // behind are spared.
                let expected = i
                    .checked_sub(1)
                    .and_then(|before| self.generations.get(before))
                    .map_or(0, |g| g.keys.len());
                self.generations.insert(
                    i,
                    Generation {
                        start,
                        keys: HashSet::with_capacity_and_hasher(expected, Default::default()),
                        lowest_seq: seq,
                        highest_seq: seq,
                    },
                );
                i
            }
        };
        let generation = &mut self.generations[at];
        generation.lowest_seq = generation.lowest_seq.min(seq);
        generation.highest_seq = generation.highest_seq.max(seq);
        if generation.keys.insert(key) {
            self.journal.push((start, key));
        }
    }

    /// A point to [`Window::undo_to`].
    pub(crate) fn mark(&self) -> usize {
        self.journal.len()
    }

    /// Takes out the keys inserted since `mark`: their writes were rolled
    /// back.
    pub(crate) fn undo_to(&mut self, mark: usize) {
        for (start, key) in self.journal.drain(mark.min(self.journal.len())..) {
            if let Some(g) = self.generations.iter_mut().find(|g| g.start == start) {
                g.keys.remove(&key);
            }
        }
    }

    /// The inserts so far are committed: they stay.
    pub(crate) fn commit(&mut self) {
        self.journal.clear();
    }

    /// Ids remembered.
    pub(crate) fn len(&self) -> usize {
        self.generations.iter().map(|g| g.keys.len()).sum()
    }

    /// The memory the sets hold (their tables, at capacity), in bytes.
    pub(crate) fn bytes(&self) -> usize {
        self.generations
            .iter()
            .map(|g| {
                // A table of n buckets holds 7n/8 keys.
                let buckets = (g.keys.capacity() * 8).div_ceil(7);
                buckets * BUCKET_BYTES + std::mem::size_of::<Generation>()
            })
            .sum()
    }
}

/// The sets' hasher: their keys are hashes already.
#[derive(Default)]
struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is used; this keeps any other use correct.
        for b in bytes {
            self.0 = (self.0.rotate_left(8)) ^ u64::from(*b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}
