//! One source's pending deltas in one shard, and how a call's shape is
//! recorded into them.
//!
//! A call makes one observation per entry it touches (its event or page
//! name, then each property or trait key). Recording one means building the
//! entry's key and looking it up, once per observation. Most calls repeat a
//! shape already seen (the same event with the same keys), so each shape
//! recorded whole is also remembered by a fingerprint of its entries: a call
//! with a remembered shape is checked against those entries (string
//! comparisons, no key built or hashed) and bumps them directly.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};

use super::{EntryDelta, EntryKind, SourceDelta};
use crate::shape::Shape;

#[derive(Default)]
pub(super) struct Pending {
    pub(super) index: HashMap<String, usize>,
    pub(super) delta: SourceDelta,
    /// Shapes recorded whole: fingerprint → their entries, in
    /// [`observations`] order.
    known: hashbrown::HashMap<u64, Vec<usize>>,
    /// Entries listed in `known`, all shapes together: kept at most the
    /// number of entries, so remembering at most doubles what a source's
    /// pending delta holds, whatever the clients send.
    known_indices: usize,
}

/// A fingerprint of the entries a call makes observations of: its kind, its
/// name and its keys in order (not their types). Equal fingerprints are
/// checked entry by entry before use, so a collision costs a lookup, never
/// a miscount.
pub(super) fn fingerprint(hasher: &impl BuildHasher, shape: &Shape) -> u64 {
    let mut h = hasher.build_hasher();
    shape.kind.hash(&mut h);
    shape.name.hash(&mut h);
    for (key, _) in &shape.fields {
        key.hash(&mut h);
    }
    h.finish()
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
pub(super) fn same_entries(a: &Shape, b: &Shape) -> bool {
    a.kind == b.kind
        && a.name == b.name
        && a.fields.len() == b.fields.len()
        && a.fields.iter().zip(&b.fields).all(|(x, y)| x.0 == y.0)
}

impl Pending {
    /// Records one call's observations, noting in `entries` (when given)
    /// the entries they went to, in [`observations`] order; whether every
    /// one found an entry (the cap turns new ones away).
    pub(super) fn record(
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
    pub(super) fn bump(&mut self, entries: &[usize], shape: &Shape, at_ms: i64) {
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
    pub(super) fn merge(&mut self, other: Pending, cap: usize) {
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

impl Pending {
    /// Records a call whose shape was recorded whole before: bumps that
    /// shape's entries (copied into `note`, when given) and returns true, or
    /// returns false (not remembered, or a fingerprint collision) and
    /// changes nothing.
    pub(super) fn bump_known(
        &mut self,
        print: u64,
        shape: &Shape,
        at_ms: i64,
        note: Option<&mut Vec<usize>>,
    ) -> bool {
        let Some(entries) = self.known.get(&print) else {
            return false;
        };
        let mut same = true;
        let mut n = 0;
        observations(shape, |kind, name, property, _| {
            let e = entries.get(n).and_then(|&i| self.delta.entries.get(i));
            same &= e.is_some_and(|e| e.kind == kind && e.name == name && e.property == property);
            n += 1;
        });
        if !same || n != entries.len() {
            return false;
        }
        let mut next = entries.iter();
        let list = &mut self.delta.entries;
        observations(shape, |_, _, _, types| {
            if let Some(e) = next.next().and_then(|&i| list.get_mut(i)) {
                e.seen(types, 1, at_ms, at_ms);
            }
        });
        if let Some(note) = note {
            note.clear();
            note.extend_from_slice(entries);
        }
        true
    }

    /// Remembers a shape just recorded whole into `entries`.
    pub(super) fn remember(&mut self, print: u64, entries: &[usize]) {
        let indices = self.known_indices + entries.len();
        if indices <= self.delta.entries.len() && !self.known.contains_key(&print) {
            self.known.insert(print, entries.to_vec());
            self.known_indices = indices;
        }
    }

    /// Entries listed by remembered shapes.
    #[cfg(test)]
    pub(super) fn known_indices(&self) -> usize {
        self.known_indices
    }

    /// Heap held by remembered shapes, in bytes (an estimate).
    pub(super) fn known_bytes(&self) -> usize {
        self.known.capacity() * (std::mem::size_of::<(u64, Vec<usize>)>() + 1)
            + self
                .known
                .values()
                .map(|v| v.capacity() * std::mem::size_of::<usize>())
                .sum::<usize>()
    }
}

/// [`observations`], for the tracker's tests.
#[cfg(test)]
pub(super) fn observations_for_tests(shape: &Shape, f: impl FnMut(EntryKind, &str, &str, u8)) {
    observations(shape, f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_colliding_fingerprint_changes_nothing() {
        let buy = Shape::of(
            r#"{"type":"track","event":"Buy","properties":{"a":1}}"#,
            "track",
        );
        let view = Shape::of(
            r#"{"type":"track","event":"View","properties":{"a":1}}"#,
            "track",
        );
        let mut p = Pending::default();
        let mut key = String::new();
        let mut entries = Vec::new();
        assert!(p.record(&mut key, &buy, 1, 100, Some(&mut entries)));
        p.remember(42, &entries);
        // `view` under `buy`'s fingerprint: checked, refused, nothing bumped.
        assert!(!p.bump_known(42, &view, 2, None));
        assert!(p.delta.entries.iter().all(|e| e.count == 1));
        assert!(p.bump_known(42, &buy, 3, None));
        assert!(
            p.delta
                .entries
                .iter()
                .all(|e| e.count == 2 && e.last_ms == 3)
        );
    }
}
