//! The in-memory window of committed (source, messageId) pairs: pure, no
//! I/O. See the module's notes (`mod.rs`) for how the writer uses it.

use std::hash::{Hash, Hasher};
use std::time::Duration;

use siphasher::sip::SipHasher13;

use super::table::{TAGS, Table};

/// How many generations a window is cut into: an id is remembered for at
/// least the window and at most 1/24 of it longer (one hour of a day).
pub(super) const GENERATIONS: i64 = 24;

/// Buckets swept of expired entries per insert: a table is swept in well
/// under two generations of steady traffic, so an expired generation's tag
/// is free again long before the 7 spare tags run out.
const SWEEP_BUCKETS: usize = 2;

/// A table is replaced by a smaller one (at a generation's start) once it
/// has this many times the slots the window's ids need.
const OVERSIZED: usize = 8;

/// Makes the keys of a window: SipHash-1-3 of (source, message id) under
/// its keys. They never change for the life of the window.
#[derive(Clone, Copy)]
pub(crate) struct Keyer((u64, u64));

impl Keyer {
    /// The key of a source's message id.
    pub(crate) fn key(self, source_id: &str, message_id: &str) -> u64 {
        let mut hasher = SipHasher13::new_with_keys(self.0.0, self.0.1);
        (source_id, message_id).hash(&mut hasher);
        hasher.finish()
    }
}

/// The committed ids of a slice of time, `[start, end)`, and the seqs they
/// were stored under (for the exact check).
pub(super) struct Generation {
    pub(super) start: i64,
    pub(super) end: i64,
    pub(super) tag: u8,
    pub(super) ids: usize,
    pub(super) lowest_seq: i64,
    pub(super) highest_seq: i64,
}

/// The set of (source, messageId) hashes committed within the window.
pub(crate) struct Window {
    pub(super) span: i64,
    pub(super) width: i64,
    /// Oldest first, not overlapping.
    pub(super) generations: Vec<Generation>,
    /// The tags of `generations`, as a bit mask.
    pub(super) live: u32,
    /// Oldest first; inserts go to the last. A table goes once it holds no
    /// entry of a live generation.
    pub(super) tables: Vec<Table>,
    /// The slice in which the newest table took its first id: it is not
    /// judged oversized before it has seen a whole window of traffic.
    pub(super) newest_since: Option<i64>,
    /// Keys inserted since the last commit, with their tag, so that a
    /// rollback can take them out again.
    journal: Vec<(u8, u64)>,
    /// The next bucket to sweep, as (table, bucket); `None` when no table
    /// holds an expired entry.
    pub(super) sweep: Option<(usize, usize)>,
    /// SipHash-1-3 keys, random for each window built from the events:
    /// nobody can choose ids that collide on purpose. A saved window
    /// (`saved.rs`) keeps its keys, since its fingerprints were made with
    /// them.
    pub(super) keys: (u64, u64),
}

impl Window {
    /// A window remembering ids for `span` (at least 1 ms).
    pub(crate) fn new(span: Duration) -> Window {
        Window::with_keys(span, rand::random())
    }

    /// A window of `span` hashing with `keys`.
    pub(super) fn with_keys(span: Duration, keys: (u64, u64)) -> Window {
        let span = i64::try_from(span.as_millis()).unwrap_or(i64::MAX).max(1);
        Window {
            span,
            width: (span / GENERATIONS).max(1),
            generations: Vec::new(),
            live: 0,
            tables: Vec::new(),
            newest_since: None,
            journal: Vec::new(),
            sweep: None,
            keys,
        }
    }

    /// Sizes the table for `ids` before they are inserted (the rebuild),
    /// instead of starting small and adding tables as it fills.
    pub(crate) fn reserve(&mut self, ids: usize) {
        if self.tables.is_empty() {
            self.tables.push(Table::for_ids(ids));
        }
    }

    /// The key of a source's message id.
    pub(crate) fn key(&self, source_id: &str, message_id: &str) -> u64 {
        self.keyer().key(source_id, message_id)
    }

    /// What makes this window's keys, for callers that hash before they
    /// take the window (off the writer thread).
    pub(crate) fn keyer(&self) -> Keyer {
        Keyer(self.keys)
    }

    /// The earliest receive time (unix ms) whose ids are still remembered
    /// at `now`: the start of the generation holding `now - span`.
    pub(crate) fn horizon(&self, now: i64) -> i64 {
        let edge = now.saturating_sub(self.span);
        edge - edge.rem_euclid(self.width)
    }

    /// Drops the generations wholly older than the window at `now`, and the
    /// tables left holding none of the others'.
    pub(crate) fn expire(&mut self, now: i64) {
        let horizon = self.horizon(now);
        let old = self
            .generations
            .iter()
            .take_while(|g| g.end <= horizon)
            .count();
        if old == 0 {
            return;
        }
        for g in self.generations.drain(..old) {
            self.live &= !(1 << g.tag);
        }
        let live = self.live;
        let newest = self.tables.len().saturating_sub(1);
        let mut i = 0;
        self.tables.retain(|t| {
            i += 1;
            i - 1 == newest || t.entries_of(live) > 0
        });
        self.sweep = Some((0, 0));
    }

    /// The seqs to search for `key`'s event: from the lowest to the highest
    /// seq of the generations that may hold it; `None` when none does
    /// (certainly not a duplicate).
    pub(crate) fn seqs_of(&self, key: u64) -> Option<(i64, i64)> {
        let tags = self.tables.iter().fold(0, |m, t| m | t.tags_of(key)) & self.live;
        if tags == 0 {
            return None;
        }
        self.generations
            .iter()
            .filter(|g| tags & (1 << g.tag) != 0)
            .map(|g| (g.lowest_seq, g.highest_seq))
            .reduce(|(lo, hi), (l, h)| (lo.min(l), hi.max(h)))
    }

    /// Asks for the buckets of `keys` before a batch looks them up one by
    /// one, between its inserts (see [`Table::prefetch`]): the waits for
    /// memory overlap each other and the inserts instead of adding up on
    /// the writer thread.
    pub(crate) fn prefetch(&self, keys: &[u64]) {
        for table in &self.tables {
            for &key in keys {
                table.prefetch(key);
            }
        }
    }

    /// Records `key`, stored as `seq` and received at `at` (unix ms).
    pub(crate) fn insert(&mut self, key: u64, at: i64, seq: i64) {
        let slice = at - at.rem_euclid(self.width);
        let found = self
            .generations
            .iter()
            .position(|g| g.start <= slice && slice < g.end);
        let i = found.unwrap_or_else(|| self.open(slice, seq));
        let g = &mut self.generations[i];
        g.lowest_seq = g.lowest_seq.min(seq);
        g.highest_seq = g.highest_seq.max(seq);
        let tag = g.tag;
        if self.tables.iter().any(|t| t.tags_of(key) & (1 << tag) != 0) {
            return;
        }
        let dead = !self.live;
        let placed = self
            .tables
            .last_mut()
            .is_some_and(|t| t.insert(key, tag, dead));
        if !placed {
            // Full: a table for twice the ids, the old one kept until its
            // generations expire. Empty, it takes any key.
            let mut table = Table::for_ids(2 * (self.len() + 1));
            table.insert(key, tag, dead);
            self.tables.push(table);
            self.newest_since = Some(slice);
        }
        self.generations[i].ids += 1;
        self.journal.push((tag, key));
        self.sweep_some(SWEEP_BUCKETS);
    }

    /// Opens the generation of `slice` and returns its index. With no tag
    /// free (more generations than tags, after the clock jumped), the
    /// nearest generation is widened to hold the slice instead.
    fn open(&mut self, slice: i64, seq: i64) -> usize {
        let at = self.generations.partition_point(|g| g.start < slice);
        let Some(tag) = self.free_tag().or_else(|| {
            self.sweep_some(usize::MAX);
            self.free_tag()
        }) else {
            let i = at.min(self.generations.len().saturating_sub(1));
            let g = &mut self.generations[i];
            g.start = g.start.min(slice);
            g.end = g.end.max(slice + self.width);
            return i;
        };
        let ids = self.len();
        let since = *self.newest_since.get_or_insert(slice);
        if slice.saturating_sub(since) > self.span
            && self
                .tables
                .last()
                .is_some_and(|t| t.slots() > OVERSIZED * (2 * ids).max(1 << 16))
        {
            // Traffic fell: a smaller table takes the new ids and the big
            // one goes once its generations expire.
            self.tables.push(Table::for_ids(2 * ids));
            self.newest_since = Some(slice);
        }
        self.generations.insert(
            at,
            Generation {
                start: slice,
                end: slice + self.width,
                tag,
                ids: 0,
                lowest_seq: seq,
                highest_seq: seq,
            },
        );
        self.live |= 1 << tag;
        at
    }

    /// A tag no live generation has and no table holds an entry of.
    fn free_tag(&self) -> Option<u8> {
        (1..TAGS as u8).find(|&t| {
            self.live & (1 << t) == 0
                && self
                    .tables
                    .iter()
                    .all(|table| table.entries_of(1 << t) == 0)
        })
    }

    /// Empties up to `n` buckets' expired entries, where the sweep stands.
    fn sweep_some(&mut self, mut n: usize) {
        let dead = !self.live;
        while let Some((table, from)) = self.sweep {
            let Some(t) = self.tables.get_mut(table) else {
                self.sweep = None;
                return;
            };
            let done = n.min(t.buckets().saturating_sub(from));
            n -= done;
            match t.sweep(from, done, dead) {
                Some(next) => self.sweep = Some((table, next)),
                None => self.sweep = Some((table + 1, 0)),
            }
            if n == 0 {
                return;
            }
        }
    }

    /// A point to [`Window::undo_to`].
    pub(crate) fn mark(&self) -> usize {
        self.journal.len()
    }

    /// Takes out the keys inserted since `mark`: their writes were rolled
    /// back.
    pub(crate) fn undo_to(&mut self, mark: usize) {
        for (tag, key) in self.journal.drain(mark.min(self.journal.len())..) {
            if self.tables.iter_mut().rev().any(|t| t.remove(key, tag))
                && let Some(g) = self.generations.iter_mut().find(|g| g.tag == tag)
            {
                g.ids = g.ids.saturating_sub(1);
            }
        }
    }

    /// The inserts so far are committed: they stay.
    pub(crate) fn commit(&mut self) {
        self.journal.clear();
    }

    /// Ids remembered.
    pub(crate) fn len(&self) -> usize {
        self.generations.iter().map(|g| g.ids).sum()
    }

    /// The memory the window holds (its tables and journal), in bytes.
    pub(crate) fn bytes(&self) -> usize {
        self.tables.iter().map(Table::bytes).sum::<usize>()
            + self.journal.capacity() * std::mem::size_of::<(u8, u64)>()
            + self.generations.capacity() * std::mem::size_of::<Generation>()
    }

    /// Tables in use (tests).
    #[cfg(test)]
    pub(super) fn tables(&self) -> usize {
        self.tables.len()
    }
}
