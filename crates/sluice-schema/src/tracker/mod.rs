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
//! **What a crash loses.** Only the pending deltas: at most one flush
//! interval of schema counts. Events are committed before they are
//! observed, so none is ever lost to the schema.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::shape::Shape;

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

#[derive(Default)]
struct Pending {
    index: HashMap<String, usize>,
    delta: SourceDelta,
}

/// How many independently locked parts the aggregate has.
pub const SHARDS: usize = 4;

type Shard = HashMap<String, Pending>;

/// The aggregate, shared by every ingest request.
pub struct Tracker {
    max_entries: usize,
    shards: [Mutex<Shard>; SHARDS],
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
        if !sources.contains_key(source_id) {
            sources.insert(source_id.to_owned(), Pending::default());
        }
        let Some(pending) = sources.get_mut(source_id) else {
            return;
        };
        let mut key = String::with_capacity(64);
        // The previous call and the entries it went to. A batch often
        // repeats one event with the same keys; its entries are then bumped
        // in place, without building their keys or hashing them again. Noted
        // only when another call follows (a single call allocates nothing).
        let mut last: Option<&Shape> = None;
        let mut entries: Vec<usize> = Vec::new();
        let mut shapes = shapes.into_iter().peekable();
        while let Some(shape) = shapes.next() {
            if last.is_some_and(|prev| same_entries(prev, shape)) {
                pending.bump(&entries, shape, at_ms);
                continue;
            }
            entries.clear();
            let note = shapes.peek().is_some().then_some(&mut entries);
            let noted = note.is_some();
            let all = pending.record(&mut key, shape, at_ms, self.max_entries, note);
            last = (noted && all).then_some(shape);
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
        })
        .sum()
}

/// The index key of an entry: kind, name and property, separated by a
/// character that names and keys do not hold in practice (a collision only
/// merges two entries' counts; it never loses an event).
fn entry_key(key: &mut String, kind: EntryKind, name: &str, property: &str) {
    key.clear();
    key.push(char::from(b'0' + kind as u8));
    key.push('\u{1f}');
    key.push_str(name);
    key.push('\u{1f}');
    key.push_str(property);
}

/// Each observation one call makes, in a fixed order: (kind, name,
/// property, JSON type bits).
fn observations(shape: &Shape, mut f: impl FnMut(EntryKind, &str, &str, u8)) {
    match (shape.kind, shape.name.as_deref()) {
        ("track", Some(event)) => {
            f(EntryKind::Track, event, "", 0);
            for (prop, t) in &shape.fields {
                f(EntryKind::Property, event, prop, t.bit());
            }
        }
        ("page", Some(name)) => f(EntryKind::Page, name, "", 0),
        ("screen", Some(name)) => f(EntryKind::Screen, name, "", 0),
        ("identify" | "group", _) => {
            let kind = if shape.kind == "identify" {
                EntryKind::IdentifyTrait
            } else {
                EntryKind::GroupTrait
            };
            for (k, t) in &shape.fields {
                f(kind, k, "", t.bit());
            }
        }
        _ => {}
    }
}

/// Whether two calls make observations of the same entries (types aside).
fn same_entries(a: &Shape, b: &Shape) -> bool {
    a.kind == b.kind
        && a.name == b.name
        && a.fields.len() == b.fields.len()
        && a.fields.iter().zip(&b.fields).all(|(x, y)| x.0 == y.0)
}

impl Pending {
    /// Records one call's observations, noting in `entries` (when given)
    /// the entries they went to, in [`observations`] order; whether every
    /// one found an entry (the cap turns new ones away).
    fn record(
        &mut self,
        key: &mut String,
        shape: &Shape,
        at_ms: i64,
        cap: usize,
        mut entries: Option<&mut Vec<usize>>,
    ) -> bool {
        let mut all = true;
        observations(shape, |kind, name, property, types| {
            match self.add(key, kind, name, property, types, at_ms, cap) {
                Some(i) => {
                    if let Some(entries) = entries.as_deref_mut() {
                        entries.push(i);
                    }
                }
                None => all = false,
            }
        });
        all
    }

    /// Records a call whose observations go to `entries` (a previous call's
    /// [`Self::record`], with the same entries).
    fn bump(&mut self, entries: &[usize], shape: &Shape, at_ms: i64) {
        let mut next = entries.iter();
        observations(shape, |_, _, _, types| {
            if let Some(e) = next.next().and_then(|&i| self.delta.entries.get_mut(i)) {
                e.seen(types, 1, at_ms, at_ms);
            }
        });
    }

    /// Records one observation; the entry it went to, or `None` when the
    /// source is at its cap (counted as overflow).
    #[allow(clippy::too_many_arguments)]
    fn add(
        &mut self,
        key: &mut String,
        kind: EntryKind,
        name: &str,
        property: &str,
        types: u8,
        at_ms: i64,
        cap: usize,
    ) -> Option<usize> {
        entry_key(key, kind, name, property);
        if let Some(&i) = self.index.get(key.as_str()) {
            self.delta.entries[i].seen(types, 1, at_ms, at_ms);
            return Some(i);
        }
        if self.delta.entries.len() >= cap {
            self.delta.overflow += 1;
            return None;
        }
        let i = self.delta.entries.len();
        self.index.insert(key.clone(), i);
        self.delta.entries.push(EntryDelta {
            kind,
            name: name.to_owned(),
            property: property.to_owned(),
            types,
            count: 1,
            first_ms: at_ms,
            last_ms: at_ms,
        });
        Some(i)
    }
}

impl EntryDelta {
    fn seen(&mut self, types: u8, count: u64, first_ms: i64, last_ms: i64) {
        self.types |= types;
        self.count += count;
        self.first_ms = self.first_ms.min(first_ms);
        self.last_ms = self.last_ms.max(last_ms);
    }
}

impl Pending {
    /// Adds another shard's delta of the same source, under `cap`.
    fn merge(&mut self, other: Pending, cap: usize) {
        self.delta.overflow += other.delta.overflow;
        let mut key = String::with_capacity(64);
        for e in other.delta.entries {
            entry_key(&mut key, e.kind, &e.name, &e.property);
            if let Some(&i) = self.index.get(key.as_str()) {
                self.delta.entries[i].seen(e.types, e.count, e.first_ms, e.last_ms);
            } else if self.delta.entries.len() >= cap {
                self.delta.overflow += e.count;
            } else {
                self.index.insert(key.clone(), self.delta.entries.len());
                self.delta.entries.push(e);
            }
        }
    }
}

#[cfg(test)]
mod tests;
