//! `profile_events`: a person's behavioural calls, one row each (version 8).
//!
//! Why a table of its own: while the calls lived inside the profile
//! document, every new call rewrote everything the person had done before
//! (a few KB per event at ten events a person), and that rewrite shared
//! SQLite's single writer with ingest. A row is written once; merges move
//! rows, the per-profile cap deletes the oldest, and nothing else touches
//! them. `WITHOUT ROWID` keyed by `(profile_id, ts, seq)`: loading a person
//! is one range scan in the order evaluation wants.
//!
//! `properties` is stored like an event body (version 12): text, or a blob
//! compressed against Segment's vocabulary (see `bodies`).
//!
//! The migration moves the events of documents written before it into
//! rows and drops them from the documents, in the same transaction.

use rusqlite::{Connection, params};

use super::super::bodies;
use crate::sql::sqlite::{Lite, ready};
use crate::{ProfileCommit, ProfileEventRow, Result};

pub(in crate::sqlite) const SCHEMA_V8: &str = "
CREATE TABLE profile_events (
    profile_id TEXT NOT NULL,
    ts         INTEGER NOT NULL,
    seq        INTEGER NOT NULL,
    source_id  TEXT NOT NULL,
    kind       TEXT NOT NULL,
    name       TEXT,
    properties TEXT NOT NULL,
    PRIMARY KEY (profile_id, ts, seq)
) WITHOUT ROWID;
INSERT OR IGNORE INTO profile_events (profile_id, ts, seq, source_id, kind, name, properties)
SELECT p.id, json_extract(e.value, '$.ts'), json_extract(e.value, '$.seq'),
       json_extract(e.value, '$.src'), json_extract(e.value, '$.t'),
       json_extract(e.value, '$.name'), COALESCE(json_extract(e.value, '$.p'), '{}')
FROM profiles p, json_each(p.doc, '$.events') e;
UPDATE profiles SET doc = json_remove(doc, '$.events')
WHERE json_type(doc, '$.events') IS NOT NULL;
";

/// Version 14: each row keeps a hash of its call's `messageId`, so that
/// the engine counts a call sent twice once (rows stored before have none).
pub(in crate::sqlite) const SCHEMA_V14: &str = "
ALTER TABLE profile_events ADD COLUMN message_hash INTEGER;
";

/// The events of one profile, oldest first.
pub(super) fn of(conn: &Connection, profile_id: &str) -> Result<Vec<ProfileEventRow>> {
    let mut stmt = conn.prepare_cached(
        "SELECT seq, ts, source_id, kind, name, properties, message_hash FROM profile_events
         WHERE profile_id = ?1 ORDER BY ts, seq",
    )?;
    let rows = stmt.query_map(params![profile_id], |r| {
        Ok(ProfileEventRow {
            seq: r.get(0)?,
            ts: r.get(1)?,
            source_id: r.get(2)?,
            kind: r.get(3)?,
            name: r.get(4)?,
            properties: bodies::read(r, 5)?,
            message_hash: r.get(6)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Appends, moves and trims a step's events, in that order (inside the
/// step's transaction). `stored[i]` is `c.events[i]`'s compressed
/// properties, `None` to keep the text.
pub(super) fn write(
    conn: &Connection,
    c: &ProfileCommit,
    stored: &[Option<Vec<u8>>],
) -> Result<()> {
    if !c.events.is_empty() {
        let mut put = conn.prepare_cached(
            "INSERT OR IGNORE INTO profile_events
                 (profile_id, ts, seq, source_id, kind, name, properties, message_hash)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        )?;
        for (i, (profile, e)) in c.events.iter().enumerate() {
            let properties: &dyn rusqlite::ToSql = match stored.get(i) {
                Some(Some(blob)) => blob,
                _ => &e.properties,
            };
            put.execute(params![
                profile,
                e.ts,
                e.seq,
                e.source_id,
                e.kind,
                e.name,
                properties,
                e.message_hash
            ])?;
        }
    }
    ready(crate::queries::engine::move_events(
        &Lite(conn),
        &c.moved_events,
    ))?;
    for (profile, ts, seq) in &c.trimmed_events {
        conn.prepare_cached(
            "DELETE FROM profile_events WHERE profile_id = ?1 AND (ts, seq) < (?2, ?3)",
        )?
        .execute(params![profile, ts, seq])?;
    }
    Ok(())
}
