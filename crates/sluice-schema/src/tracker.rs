//! The in-memory schema aggregate: what each source sent since the last
//! flush, bounded per source.
//!
//! Ingest calls [`Tracker::observe`] after its commit (never before: the
//! schema is not on the commit path); a background task calls
//! [`Tracker::take`] every flush interval and hands the deltas to the store,
//! which merges them into first seen / last seen / types / hourly volumes.
//!
//! **Bounded.** Each source holds at most `max_entries` pending entries;
//! an observation that would add one more is counted in `overflow` instead
//! (and the store applies the same cap to what it keeps), so memory is
//! `O(sources × max_entries)` whatever the clients send.
//!
//! **What a crash loses.** Only the pending deltas: at most one flush
//! interval of schema counts. Events are committed before they are
//! observed, so none is ever lost to the schema.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Mutex;

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

/// The aggregate, shared by every ingest request.
pub struct Tracker {
    max_entries: usize,
    sources: Mutex<HashMap<String, Pending>>,
}

impl Tracker {
    /// A tracker keeping at most `max_entries` pending entries per source.
    pub fn new(max_entries: usize) -> Tracker {
        Tracker {
            max_entries,
            sources: Mutex::new(HashMap::new()),
        }
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
        let mut sources = self.sources.lock().unwrap_or_else(|p| p.into_inner());
        if !sources.contains_key(source_id) {
            sources.insert(source_id.to_owned(), Pending::default());
        }
        let Some(pending) = sources.get_mut(source_id) else {
            return;
        };
        let mut key = String::with_capacity(64);
        for shape in shapes {
            let name = shape.name.as_deref();
            match (shape.kind.as_str(), name) {
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

    /// Takes every pending delta, leaving the tracker empty.
    pub fn take(&self) -> Vec<(String, SourceDelta)> {
        let mut sources = self.sources.lock().unwrap_or_else(|p| p.into_inner());
        sources
            .drain()
            .map(|(id, p)| (id, p.delta))
            .filter(|(_, d)| !d.entries.is_empty() || d.overflow > 0)
            .collect()
    }

    /// An estimate of the heap held by pending deltas, in bytes.
    pub fn approx_bytes(&self) -> usize {
        let sources = self.sources.lock().unwrap_or_else(|p| p.into_inner());
        let per_slot =
            std::mem::size_of::<(String, usize)>() + std::mem::size_of::<EntryDelta>() + 8;
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
        key.clear();
        let _ = write!(key, "{}\u{1f}{name}\u{1f}{property}", kind as u8);
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
    fn kinds_round_trip() {
        for k in EntryKind::ALL {
            assert_eq!(EntryKind::parse(k.as_str()), Some(k));
        }
    }
}
