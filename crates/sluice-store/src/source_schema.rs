//! [`SchemaStore`]: what sources send (the observed schema), the rules that
//! block calls, the filters of destinations, and blocked-call usage.
//!
//! Rules and filters are stored as opaque JSON documents: the store does not
//! interpret them (`sluice-schema` parses them; the admin API validates
//! before writing, and the routing table reads them all on each refresh).
//!
//! The schema is written by periodic flushes of the in-memory aggregate
//! ([`SchemaFlush`]), never on the ingest path. Layout, in both backends:
//! - `schema_entries (source_id, kind, name, property)`: types seen (bit
//!   set), first and last seen. At most `max_entries` rows per source: a
//!   flush adds new rows only while the source is under its cap, and counts
//!   the observations it could not keep in `schema_overflow`.
//! - `schema_volumes (source_id, kind, name, property, hour)`: observations
//!   per hour; hours older than [`VOLUME_DAYS`] days are deleted by flushes.
//! - `usage_blocked (source_id, day, event)`: blocked calls per event name,
//!   written by `append` in the events' transaction (exact, like `usage`).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::Result;

/// How long hourly volumes are kept.
pub const VOLUME_DAYS: i64 = 30;
const HOUR_MS: i64 = 3_600_000;

/// One entry's observations since the last flush.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaEntryDelta {
    /// `track`, `page`, `screen`, `identify_trait`, `group_trait`, `property`.
    pub kind: String,
    pub name: String,
    /// Property key for kind `property`, else empty.
    pub property: String,
    /// JSON types seen, as a bit set.
    pub types: i64,
    pub count: u64,
    pub first_seen_ms: i64,
    pub last_seen_ms: i64,
}

impl SchemaEntryDelta {
    /// The hour bucket the delta's count goes to (its first observation's).
    pub fn hour(&self) -> i64 {
        self.first_seen_ms.div_euclid(HOUR_MS) * HOUR_MS
    }
}

/// One source's deltas, as one atomic flush.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaFlush {
    pub source_id: String,
    pub entries: Vec<SchemaEntryDelta>,
    /// Observations the aggregate already could not keep.
    pub overflow: u64,
    /// The per-source cap on stored entries.
    pub max_entries: u64,
    pub now: DateTime<Utc>,
}

/// A stored schema entry with its volumes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SchemaEntry {
    pub kind: String,
    pub name: String,
    pub property: String,
    pub types: i64,
    pub first_seen: DateTime<Utc>,
    pub last_seen: DateTime<Utc>,
    pub volume_24h: u64,
    pub volume_7d: u64,
    pub volume_30d: u64,
}

/// Sort keys for [`SchemaStore::schema_entries`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SchemaSort {
    #[default]
    Name,
    FirstSeen,
    LastSeen,
    Volume24h,
    Volume7d,
    Volume30d,
}

impl SchemaSort {
    pub const ALL: [(&'static str, SchemaSort); 6] = [
        ("name", SchemaSort::Name),
        ("first_seen", SchemaSort::FirstSeen),
        ("last_seen", SchemaSort::LastSeen),
        ("volume_24h", SchemaSort::Volume24h),
        ("volume_7d", SchemaSort::Volume7d),
        ("volume_30d", SchemaSort::Volume30d),
    ];

    pub fn parse(s: &str) -> Option<SchemaSort> {
        Self::ALL.iter().find(|(n, _)| *n == s).map(|(_, v)| *v)
    }

    /// The SQL sort expression (a fixed string, never user text), the same
    /// in both backends' queries.
    pub(crate) fn column(self) -> &'static str {
        match self {
            SchemaSort::Name => "e.name",
            SchemaSort::FirstSeen => "e.first_seen",
            SchemaSort::LastSeen => "e.last_seen",
            SchemaSort::Volume24h => "v24",
            SchemaSort::Volume7d => "v7",
            SchemaSort::Volume30d => "v30",
        }
    }
}

/// Which entries to list, in what order, which page.
#[derive(Debug, Clone, Default)]
pub struct SchemaQuery {
    /// Only entries of this kind.
    pub kind: Option<String>,
    /// Only entries with this name (e.g. one event's properties).
    pub name: Option<String>,
    pub sort: SchemaSort,
    pub descending: bool,
    pub limit: u32,
    pub offset: u32,
    pub now: DateTime<Utc>,
}

impl SchemaQuery {
    /// Lower bounds (hour starts, ms) of the 24 h, 7 d and 30 d windows: the
    /// current hour and the 23 (167, 719) before it.
    pub fn windows(&self) -> (i64, i64, i64) {
        let hour = self.now.timestamp_millis().div_euclid(HOUR_MS) * HOUR_MS;
        (
            hour - 23 * HOUR_MS,
            hour - (7 * 24 - 1) * HOUR_MS,
            hour - (VOLUME_DAYS * 24 - 1) * HOUR_MS,
        )
    }
}

/// One page of a source's schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SchemaPage {
    pub entries: Vec<SchemaEntry>,
    /// Entries matching the query, over all pages.
    pub total: u64,
    /// Observations not recorded because the source reached its cap.
    pub overflow: u64,
}

/// Blocked calls of one event name on one UTC day.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockedDay {
    pub day: String,
    pub event: String,
    pub count: u64,
}

/// Storage of the schema, block rules and destination filters.
#[async_trait]
pub trait SchemaStore: Send + Sync + 'static {
    /// Replaces a source's rules document.
    async fn put_source_rules(&self, source_id: &str, rules: &str) -> Result<()>;
    /// Every source's rules document: `(source id, document)`.
    async fn list_source_rules(&self) -> Result<Vec<(String, String)>>;
    /// Replaces a destination's filters document.
    async fn put_destination_filters(&self, destination_id: &str, filters: &str) -> Result<()>;
    /// Every destination's filters document: `(destination id, document)`.
    async fn list_destination_filters(&self) -> Result<Vec<(String, String)>>;
    /// Merges one source's deltas, atomically, under the entry cap.
    async fn flush_schema(&self, flush: SchemaFlush) -> Result<()>;
    /// One page of a source's schema.
    async fn schema_entries(&self, source_id: &str, query: &SchemaQuery) -> Result<SchemaPage>;
    /// Blocked calls per event name and day, days in `[from, to]`.
    async fn blocked_usage(&self, source_id: &str, from: &str, to: &str)
    -> Result<Vec<BlockedDay>>;
}

/// Splits a flush's deltas into those to write and the observations lost to
/// the cap: entries already stored (`exists(index)`) are always kept; new
/// ones while `stored` (the source's current entry count) is under `cap`.
pub(crate) fn admit(
    entries: &[SchemaEntryDelta],
    exists: impl Fn(usize) -> bool,
    mut stored: u64,
    cap: u64,
) -> (Vec<&SchemaEntryDelta>, u64) {
    let mut keep = Vec::with_capacity(entries.len());
    let mut lost = 0;
    for (i, e) in entries.iter().enumerate() {
        if exists(i) {
            keep.push(e);
        } else if stored < cap {
            stored += 1;
            keep.push(e);
        } else {
            lost += e.count;
        }
    }
    (keep, lost)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(name: &str, count: u64) -> SchemaEntryDelta {
        SchemaEntryDelta {
            kind: "track".into(),
            name: name.into(),
            property: String::new(),
            types: 0,
            count,
            first_seen_ms: 0,
            last_seen_ms: 0,
        }
    }

    #[test]
    fn admit_keeps_known_entries_and_new_ones_under_the_cap() {
        let entries = [delta("old", 5), delta("new1", 2), delta("new2", 3)];
        let (keep, lost) = admit(&entries, |i| i == 0, 9, 10);
        let names: Vec<&str> = keep.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["old", "new1"]);
        assert_eq!(lost, 3);
    }
}
