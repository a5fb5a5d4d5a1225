//! Batch-level `context` and `integrations` merged into each item, and the
//! limits the merged item must still keep.
//!
//! The merge is shallow: the item's own keys win and keep their order; keys
//! only the batch has are appended. Two limits apply to the item as merged,
//! not just as received:
//!
//! - **Size.** An item counts its raw text plus what the merge adds to it,
//!   as compact JSON (`,"context":{…}` when the item has no `context`, each
//!   appended `,"key":value` when it has one): the per-event limit of the
//!   spec holds for the event as stored, so a large batch `context` cannot
//!   ride along on thousands of tiny items. The merge may add at most
//!   [`MERGE_ALLOWANCE`] beyond the limit: clients check the limit on the
//!   item they send, and analytics-java puts its `context.library` (about
//!   120 bytes) at batch level, so an item at exactly its own 32 KiB cap
//!   must still pass. The allowance bounds what a batch's `context` adds to
//!   the whole request at 2500 × 1 KiB, a few times the request's own size.
//! - **Nesting.** A batch-level member sits one level deeper in the item
//!   than in the batch, so it may nest at most [`MAX_DEPTH`] − 2 levels
//!   below its key (the item's object and `context` are the first two).
//!
//! Both are checked before anything is copied into the item, and cheaply:
//! the facts about each batch object (its compact length, each member's
//! length and nesting) are taken once per batch, and an item is measured
//! member by member only when its raw size plus both whole batch objects
//! passes the limit, or when a batch member is too deep to merge anywhere.

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::raw::{self, Field, RawObject, Slot};
use crate::{ErrorCode, ValidationError};

/// The deepest nesting of objects and arrays a call may have, counting the
/// call's own object as the first: serde_json's parser refuses more.
pub const MAX_DEPTH: usize = 127;

/// Bytes the batch-level objects may add to an item beyond the per-event
/// limit (see the module doc).
pub const MERGE_ALLOWANCE: usize = 1024;

/// How deep a batch-level member's value may nest: the item's object and
/// the `context` (or `integrations`) object are the two levels above it.
const MAX_MEMBER_DEPTH: usize = MAX_DEPTH - 2;

/// A batch-level object with what merging it into an item costs.
#[derive(Debug)]
pub(crate) struct BatchObject {
    pub map: Map<String, Value>,
    /// Per member in map order: length of `"key":value` as compact JSON,
    /// and the nesting of the value (0 for a scalar).
    members: Vec<(usize, usize)>,
    /// Length of the whole object as compact JSON.
    json_len: usize,
    /// The deepest member's nesting.
    depth: usize,
}

impl BatchObject {
    pub fn new(map: Map<String, Value>) -> Self {
        let members: Vec<(usize, usize)> = map
            .iter()
            .map(|(k, v)| (compact_len(k) + 1 + compact_len(v), depth(v)))
            .collect();
        let json_len = 2 + members.iter().map(|m| m.0).sum::<usize>() + members.len().max(1) - 1;
        let depth = members.iter().map(|m| m.1).max().unwrap_or(0);
        BatchObject {
            map,
            members,
            json_len,
            depth,
        }
    }

    /// Bytes merging this object under `key` adds to an item whose own value
    /// there is `own`, and the deepest nesting of the members it adds.
    fn added(&self, key: &str, own: &Own<'_>) -> Added {
        match own {
            // `,"key":{…}`
            Own::Absent => Added {
                bytes: key.len() + 4 + self.json_len,
                removed: 0,
                depth: self.depth,
            },
            // `null` becomes `{…}`
            Own::Null => Added {
                bytes: self.json_len,
                removed: 4,
                depth: self.depth,
            },
            // `,"key":value` per member the item lacks
            Own::Object { len, has } => {
                let mut added = Added::default();
                let mut appended = 0usize;
                for ((k, _), (bytes, depth)) in self.map.iter().zip(&self.members) {
                    if !has(k) {
                        added.bytes += bytes + 1;
                        added.depth = added.depth.max(*depth);
                        appended += 1;
                    }
                }
                if *len == 0 && appended > 0 {
                    added.removed = 1;
                }
                added
            }
        }
    }
}

/// An item's own value under a merged key.
pub(crate) enum Own<'o> {
    /// The item has no such key: the batch object is added whole.
    Absent,
    /// The item's value is `null`: the batch object replaces it.
    Null,
    /// The item's own object, of `len` members: the batch members it lacks
    /// (`has` is false) are appended.
    Object {
        len: usize,
        has: &'o dyn Fn(&str) -> bool,
    },
}

#[derive(Debug, Default)]
struct Added {
    bytes: usize,
    removed: usize,
    depth: usize,
}

/// Refuses an item that, once the batch objects are merged into it, would
/// be larger than `max_bytes` plus [`MERGE_ALLOWANCE`] (its `raw_len`
/// counted as received, which the caller has checked against `max_bytes`)
/// or nest deeper than [`MAX_DEPTH`]. `context` must already be opened
/// ([`open_context`]); `own_integrations` is the item's own object.
pub(crate) fn check(
    call: &RawObject<'_>,
    raw_len: usize,
    own_integrations: Option<&Map<String, Value>>,
    batch: [Option<&BatchObject>; 2],
    per_event: usize,
) -> Result<(), ValidationError> {
    let max_bytes = per_event + MERGE_ALLOWANCE;
    let [context, integrations] = batch;
    let present = [("context", context), ("integrations", integrations)];
    let whole: usize = present
        .iter()
        .filter_map(|(key, object)| object.map(|o| key.len() + 4 + o.json_len))
        .sum();
    let deep = present
        .iter()
        .any(|(_, object)| object.is_some_and(|o| o.depth > MAX_MEMBER_DEPTH));
    if raw_len + whole <= max_bytes && !deep {
        return Ok(());
    }
    let mut total = raw_len;
    let mut removed = 0usize;
    for (key, object) in present {
        let Some(object) = object else { continue };
        let added = if key == "context" {
            with_own_context(call, |own| object.added(key, own))
        } else {
            let has = |k: &str| own_integrations.is_some_and(|own| own.contains_key(k));
            let own = match own_integrations {
                Some(own) => Own::Object {
                    len: own.len(),
                    has: &has,
                },
                None if call.contains_key(key) => Own::Null,
                None => Own::Absent,
            };
            object.added(key, &own)
        };
        if added.depth > MAX_MEMBER_DEPTH {
            return Err(ValidationError::new(
                ErrorCode::InvalidJson,
                format!(
                    "the batch-level '{key}' merged into this event would nest {} levels, \
                     over the limit of {MAX_DEPTH} (recursion limit exceeded)",
                    added.depth + 2
                ),
            ));
        }
        total += added.bytes;
        removed += added.removed;
    }
    let total = total.saturating_sub(removed);
    if total > max_bytes {
        return Err(ValidationError::new(
            ErrorCode::EventTooLarge,
            format!(
                "event is {total} bytes with the batch-level {} merged in, over the limit of \
                 {max_bytes} ({per_event} per event, and {MERGE_ALLOWANCE} more for what the \
                 batch adds)",
                merged_names(context.is_some(), integrations.is_some())
            ),
        ));
    }
    Ok(())
}

fn merged_names(context: bool, integrations: bool) -> &'static str {
    match (context, integrations) {
        (true, true) => "'context' and 'integrations'",
        (true, false) => "'context'",
        _ => "'integrations'",
    }
}

/// Calls `f` with the item's own `context`, already opened.
fn with_own_context<T>(call: &RawObject<'_>, f: impl FnOnce(&Own<'_>) -> T) -> T {
    match call.get("context") {
        None => f(&Own::Absent),
        Some(Slot::Object(own)) => {
            let keys: HashSet<String> = own.fields().into_iter().map(|(k, _)| k).collect();
            let has = |k: &str| keys.contains(k);
            f(&Own::Object {
                len: keys.len(),
                has: &has,
            })
        }
        Some(_) => f(&Own::Null),
    }
}

/// Opens the call's `context` one level (its values stay raw) so the merge
/// and `context.ip` can add keys; `null` stays. A non-object `context` is
/// rejected, since `context.ip` needs an object.
pub(crate) fn open_context(call: &mut RawObject<'_>) -> Result<(), ValidationError> {
    let Some(slot) = call.slot_mut("context") else {
        return Ok(());
    };
    let own = std::mem::replace(slot, Slot::Owned(Value::Null));
    match raw::open_object(Some(own)) {
        Ok(Some(own)) => *slot = Slot::Object(own),
        Ok(None) => {}
        Err(()) => return Err(not_an_object("context")),
    }
    Ok(())
}

/// Overlays the call's own (opened) `context` onto the batch-level one: the
/// item's keys win and keep their order; batch-only keys are appended.
pub(crate) fn merge_context<'a>(call: &mut RawObject<'a>, batch: Option<&'a Map<String, Value>>) {
    let Some(batch) = batch else { return };
    match call.slot_mut("context") {
        None => call.insert_value("context", Value::Object(batch.clone())),
        Some(Slot::Object(own)) => own.append_missing(batch),
        Some(slot) => *slot = Slot::Owned(Value::Object(batch.clone())),
    }
}

/// The call's own `integrations` object, parsed (routing needs it); `None`
/// when absent or `null`.
pub(crate) fn own_integrations(
    call: &RawObject<'_>,
) -> Result<Option<Map<String, Value>>, ValidationError> {
    match call.get("integrations") {
        None => Ok(None),
        Some(slot) if matches!(slot.field(), Field::Null) => Ok(None),
        Some(slot) => raw::slot_map(slot)
            .map(Some)
            .ok_or_else(|| not_an_object("integrations")),
    }
}

/// The same overlay for `integrations`: returns the call's final
/// `integrations` object, if any. Without a batch-level object the call's
/// own text is stored as it came.
pub(crate) fn merge_integrations(
    call: &mut RawObject<'_>,
    own: Option<Map<String, Value>>,
    batch: Option<&Map<String, Value>>,
) -> Option<Map<String, Value>> {
    let Some(batch) = batch else { return own };
    let mut merged = own.unwrap_or_default();
    for (k, v) in batch {
        if !merged.contains_key(k) {
            merged.insert(k.clone(), v.clone());
        }
    }
    call.insert_value("integrations", Value::Object(merged.clone()));
    Some(merged)
}

pub(crate) fn not_an_object(key: &str) -> ValidationError {
    ValidationError::new(
        ErrorCode::InvalidField,
        format!("'{key}' must be an object"),
    )
}

/// Length of `value` as compact JSON.
fn compact_len<T: serde::Serialize + ?Sized>(value: &T) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a `Value` or a string to a counter cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// Levels of objects and arrays in `value`: 0 for a scalar, 1 for `{}`.
fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

#[cfg(test)]
#[path = "merge_tests.rs"]
mod tests;
