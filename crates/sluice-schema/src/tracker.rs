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
use std::hash::{BuildHasher, RandomState};
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
    /// Picks a thread's home shard.
    spread: RandomState,
}

impl Tracker {
    /// A tracker keeping at most `max_entries` pending entries per source.
    pub fn new(max_entries: usize) -> Tracker {
        Tracker {
            max_entries,
            shards: Default::default(),
            spread: RandomState::new(),
        }
    }

    /// The calling thread's shard, or the next one not in use, or (all
    /// busy) the thread's own once it is free.
    fn shard(&self) -> MutexGuard<'_, Shard> {
        let home = self.spread.hash_one(std::thread::current().id()) as usize % SHARDS;
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
        for shape in shapes {
            let name = shape.name.as_deref();
            match (shape.kind, name) {
                ("track", Some(event)) => {
                    pending.add(
                        &mut key,
                        EntryKind::Track,
                        event,
                        "",
                        0,
                        at_ms,
                        self.max_entries,
                    );
                    for (prop, t) in &shape.fields {
                        pending.add(
                            &mut key,
                            EntryKind::Property,
                            event,
                            prop,
                            t.bit(),
                            at_ms,
                            self.max_entries,
                        );
                    }
                }
                ("page", Some(n)) => {
                    pending.add(&mut key, EntryKind::Page, n, "", 0, at_ms, self.max_entries)
                }
                ("screen", Some(n)) => pending.add(
                    &mut key,
                    EntryKind::Screen,
                    n,
                    "",
                    0,
                    at_ms,
                    self.max_entries,
                ),
                ("identify" | "group", _) => {
                    let kind = if shape.kind == "identify" {
                        EntryKind::IdentifyTrait
                    } else {
                        EntryKind::GroupTrait
                    };
                    for (k, t) in &shape.fields {
                        pending.add(&mut key, kind, k, "", t.bit(), at_ms, self.max_entries);
                    }
                }
                _ => {}
            }
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

impl Pending {
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
    ) {
        entry_key(key, kind, name, property);
        if let Some(&i) = self.index.get(key.as_str()) {
            let e = &mut self.delta.entries[i];
            e.types |= types;
            e.count += 1;
            e.first_ms = e.first_ms.min(at_ms);
            e.last_ms = e.last_ms.max(at_ms);
            return;
        }
        if self.delta.entries.len() >= cap {
            self.delta.overflow += 1;
            return;
        }
        self.index.insert(key.clone(), self.delta.entries.len());
        self.delta.entries.push(EntryDelta {
            kind,
            name: name.to_owned(),
            property: property.to_owned(),
            types,
            count: 1,
            first_ms: at_ms,
            last_ms: at_ms,
        });
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
                let mine = &mut self.delta.entries[i];
                mine.types |= e.types;
                mine.count += e.count;
                mine.first_ms = mine.first_ms.min(e.first_ms);
                mine.last_ms = mine.last_ms.max(e.last_ms);
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
mod tests {
    use super::*;

    fn shape(body: &str) -> Shape {
        Shape::of(body, "track")
    }

    #[test]
    fn aggregates_names_properties_and_traits() {
        let t = Tracker::new(100);
        let shapes = [
            shape(r#"{"type":"track","event":"Buy","properties":{"total":1}}"#),
            shape(r#"{"type":"track","event":"Buy","properties":{"total":"1"}}"#),
            shape(r#"{"type":"page","name":"Home"}"#),
            shape(r#"{"type":"identify","traits":{"email":"x"}}"#),
            shape(r#"{"type":"group","traits":{"plan":"p"}}"#),
        ];
        t.observe("s1", &shapes, 10);
        t.observe("s1", &shapes[..1], 5);
        let taken = t.take();
        assert_eq!(taken.len(), 1);
        let delta = &taken[0].1;
        let find = |k: EntryKind, n: &str| {
            delta
                .entries
                .iter()
                .find(|e| e.kind == k && e.name == n)
                .cloned()
        };
        let buy = find(EntryKind::Track, "Buy").unwrap();
        assert_eq!((buy.count, buy.first_ms, buy.last_ms), (3, 5, 10));
        let total = find(EntryKind::Property, "Buy").unwrap();
        assert_eq!(total.property, "total");
        assert_eq!(crate::JsonType::names(total.types), ["number", "string"]);
        assert!(find(EntryKind::Page, "Home").is_some());
        assert!(find(EntryKind::IdentifyTrait, "email").is_some());
        assert!(find(EntryKind::GroupTrait, "plan").is_some());
        assert!(t.take().is_empty());
    }

    #[test]
    fn cap_counts_overflow_instead_of_growing() {
        let t = Tracker::new(3);
        let shapes: Vec<Shape> = (0..10)
            .map(|i| shape(&format!(r#"{{"type":"track","event":"E{i}"}}"#)))
            .collect();
        t.observe("s", &shapes, 1);
        t.observe("s", &shapes[..1], 2);
        let taken = t.take();
        assert_eq!(taken[0].1.entries.len(), 3);
        assert_eq!(taken[0].1.overflow, 7);
        assert_eq!(taken[0].1.entries[0].count, 2);
    }

    #[test]
    fn memory_estimate_grows_with_entries_and_stops_at_the_cap() {
        let t = Tracker::new(50);
        let empty = t.approx_bytes();
        let shapes: Vec<Shape> = (0..200)
            .map(|i| shape(&format!(r#"{{"type":"track","event":"Event number {i}"}}"#)))
            .collect();
        t.observe("s", &shapes[..50], 1);
        let at_cap = t.approx_bytes();
        assert!(at_cap > empty);
        t.observe("s", &shapes, 1);
        assert_eq!(t.approx_bytes(), at_cap);
    }

    #[test]
    fn shards_written_by_several_threads_merge_under_the_cap() {
        let t = Tracker::new(4);
        let shapes: Vec<Shape> = (0..6)
            .map(|i| shape(&format!(r#"{{"type":"track","event":"E{i}"}}"#)))
            .collect();
        // Hold every shard but one at a time, so each observation lands in
        // a different shard.
        for held in 0..SHARDS {
            let _guards: Vec<_> = (0..SHARDS)
                .filter(|&i| i != held)
                .map(|i| t.shards[i].lock().unwrap())
                .collect();
            std::thread::scope(|s| {
                s.spawn(|| t.observe("s", &shapes[held..held + 3], held as i64));
            });
        }
        let taken = t.take();
        let delta = &taken[0].1;
        let total: u64 = delta.entries.iter().map(|e| e.count).sum();
        assert_eq!(delta.entries.len(), 4);
        assert_eq!(total + delta.overflow, 3 * SHARDS as u64);
        let e0 = delta.entries.iter().find(|e| e.name == "E1").unwrap();
        assert_eq!((e0.count, e0.first_ms, e0.last_ms), (2, 0, 1));
        assert!(t.take().is_empty());
    }

    #[test]
    fn kinds_round_trip() {
        for k in EntryKind::ALL {
            assert_eq!(EntryKind::parse(k.as_str()), Some(k));
        }
    }
}
