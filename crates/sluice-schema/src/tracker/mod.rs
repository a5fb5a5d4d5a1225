//! The in-memory schema aggregate: what each source sent since the last
//! flush, bounded per source.
//!
//! Ingest calls [`Tracker::observe`] after its commit (never before: the
//! schema is not on the commit path); a background task calls
//! [`Tracker::take`] every flush interval and hands the deltas to the store,
//! which merges them into first seen / last seen / types / hourly volumes.
//!
//! **Bounded.** Each source holds at most `max_entries` pending entries per
//! shard; an observation that would add one more is counted in `overflow`
//! instead (and [`Tracker::take`] and the store apply the same cap to what
//! they keep), so memory is `O(sources × SHARDS × max_entries)` whatever the
//! clients send.
//!
//! **Contention.** The aggregate is split into [`SHARDS`] shards, each
//! behind its own lock; a request records into its thread's shard, or the
//! next free one when that is busy, so concurrent requests rarely wait on
//! each other. [`Tracker::take`] merges the shards.
//!
//! **Cost per call.** A call's shape is usually one seen before; the
//! shard remembers shapes recorded whole by a fingerprint and bumps their
//! entries without building or hashing an entry key (module `pending`), and at
//! most one entry index is remembered per entry, so this at most doubles a
//! source's pending state.
//!
//! **What a crash loses.** Only the pending deltas: at most one flush
//! interval of schema counts. Events are committed before they are
//! observed, so none is ever lost to the schema.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::shape::Shape;
use pending::{Pending, fingerprint, same_entries};

mod pending;

/// What a schema entry describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryKind {
    /// A track event name.
    Track,
    /// A page name.
    Page,
    /// A screen name.
    Screen,
    /// An identify trait key.
    IdentifyTrait,
    /// A group trait key.
    GroupTrait,
    /// A property key of a track event (`name` is the event).
    Property,
}

impl EntryKind {
    pub const ALL: [EntryKind; 6] = [
        EntryKind::Track,
        EntryKind::Page,
        EntryKind::Screen,
        EntryKind::IdentifyTrait,
        EntryKind::GroupTrait,
        EntryKind::Property,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EntryKind::Track => "track",
            EntryKind::Page => "page",
            EntryKind::Screen => "screen",
            EntryKind::IdentifyTrait => "identify_trait",
            EntryKind::GroupTrait => "group_trait",
            EntryKind::Property => "property",
        }
    }

    pub fn parse(s: &str) -> Option<EntryKind> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// What one entry saw since the last flush.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryDelta {
    pub kind: EntryKind,
    /// Event, page or screen name, or trait key.
    pub name: String,
    /// The property key (kind `Property`), else empty.
    pub property: String,
    /// JSON types seen, as [`crate::JsonType`] bits (0 for names).
    pub types: u8,
    pub count: u64,
    /// Unix milliseconds.
    pub first_ms: i64,
    pub last_ms: i64,
}

/// One source's deltas, as taken for a flush.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceDelta {
    pub entries: Vec<EntryDelta>,
    /// Observations not recorded because the source was at its cap.
    pub overflow: u64,
}

/// How many independently locked parts the aggregate has.
pub const SHARDS: usize = 4;

/// Keyed by source id; foldhash, as the ids are ours, not the clients'.
type Shard = hashbrown::HashMap<String, Pending>;

/// The aggregate, shared by every ingest request.
pub struct Tracker {
    max_entries: usize,
    shards: [Mutex<Shard>; SHARDS],
    /// Seeds the shapes' fingerprints (one seed per tracker).
    prints: hashbrown::DefaultHashBuilder,
}

/// Threads take home shards in turn, so the runtime's few workers each
/// start at a different one.
static NEXT_HOME: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static HOME: usize = NEXT_HOME.fetch_add(1, Ordering::Relaxed) % SHARDS;
}

impl Tracker {
    /// A tracker keeping at most `max_entries` pending entries per source.
    pub fn new(max_entries: usize) -> Tracker {
        Tracker {
            max_entries,
            shards: Default::default(),
            prints: hashbrown::DefaultHashBuilder::default(),
        }
    }

    /// The calling thread's shard, or the next one not in use, or (all
    /// busy) the thread's own once it is free.
    fn shard(&self) -> MutexGuard<'_, Shard> {
        let home = HOME.with(|home| *home);
        for k in 0..SHARDS {
            if let Ok(guard) = self.shards[(home + k) % SHARDS].try_lock() {
                return guard;
            }
        }
        self.shards[home].lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn max_entries(&self) -> usize {
        self.max_entries
    }

    /// Records what one request's calls looked like, at `at_ms`.
    pub fn observe<'a>(
        &self,
        source_id: &str,
        shapes: impl IntoIterator<Item = &'a Shape>,
        at_ms: i64,
    ) {
        let mut sources = self.shard();
        let pending = sources.entry_ref(source_id).or_default();
        // Built only for shapes not remembered, so most calls allocate none.
        let mut key = String::new();
        // The previous call and the entries it went to. A batch often
        // repeats one event with the same keys; its entries are then bumped
        // in place, without even a fingerprint. Noted only when another call
        // follows (a single call with a known shape allocates nothing).
        let mut last: Option<&Shape> = None;
        let mut entries: Vec<usize> = Vec::new();
        let mut shapes = shapes.into_iter().peekable();
        while let Some(shape) = shapes.next() {
            if last.is_some_and(|prev| same_entries(prev, shape)) {
                pending.bump(&entries, shape, at_ms);
                continue;
            }
            let print = fingerprint(&self.prints, shape);
            let followed = shapes.peek().is_some();
            let note = followed.then_some(&mut entries);
            if pending.bump_known(print, shape, at_ms, note) {
                last = followed.then_some(shape);
                continue;
            }
            entries.clear();
            let all = pending.record(&mut key, shape, at_ms, self.max_entries, Some(&mut entries));
            if all {
                pending.remember(print, &entries);
            }
            last = (followed && all).then_some(shape);
        }
    }

    /// Takes every pending delta, leaving the tracker empty. The shards are
    /// merged under the per-source cap: what does not fit is overflow.
    pub fn take(&self) -> Vec<(String, SourceDelta)> {
        let mut merged: HashMap<String, Pending> = HashMap::new();
        for shard in &self.shards {
            let drained: Vec<(String, Pending)> = {
                let mut guard = shard.lock().unwrap_or_else(|p| p.into_inner());
                guard.drain().collect()
            };
            for (id, pending) in drained {
                match merged.entry(id) {
                    Entry::Vacant(v) => {
                        v.insert(pending);
                    }
                    Entry::Occupied(mut o) => o.get_mut().merge(pending, self.max_entries),
                }
            }
        }
        merged
            .into_iter()
            .map(|(id, p)| (id, p.delta))
            .filter(|(_, d)| !d.entries.is_empty() || d.overflow > 0)
            .collect()
    }

    /// An estimate of the heap held by pending deltas, in bytes.
    pub fn approx_bytes(&self) -> usize {
        let per_slot =
            std::mem::size_of::<(String, usize)>() + std::mem::size_of::<EntryDelta>() + 8;
        let mut total = 0;
        for shard in &self.shards {
            let sources = shard.lock().unwrap_or_else(|p| p.into_inner());
            total += shard_bytes(&sources, per_slot);
        }
        total
    }
}

fn shard_bytes(sources: &Shard, per_slot: usize) -> usize {
    sources
        .iter()
        .map(|(id, p)| {
            id.capacity()
                + p.index.capacity() * per_slot
                + p.index.keys().map(String::capacity).sum::<usize>()
                + p.delta
                    .entries
                    .iter()
                    .map(|e| e.name.capacity() + e.property.capacity())
                    .sum::<usize>()
                + p.known_bytes()
        })
        .sum()
}

#[cfg(test)]
mod tests;
