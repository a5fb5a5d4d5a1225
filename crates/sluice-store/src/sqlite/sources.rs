//! Service settings (`meta`) and sources.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::rows::{conflict_or_backend, ms, time};
use crate::{NewSource, Result, Source, SourcePatch};

const SOURCE_COLUMNS: &str =
    "id, name, enabled, write_key_hash, write_key_hint, created_at, updated_at";

pub(super) fn get_meta(conn: &Connection, key: &str) -> Result<Option<String>> {
    let mut stmt = conn.prepare_cached("SELECT value FROM meta WHERE key = ?1")?;
    Ok(stmt.query_row([key], |r| r.get(0)).optional()?)
}

pub(super) fn put_meta_if_absent(conn: &Connection, key: &str, value: &str) -> Result<String> {
    conn.prepare_cached(
        "INSERT INTO meta (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO NOTHING",
    )?
    .execute([key, value])?;
    let kept = get_meta(conn, key)?;
    kept.ok_or_else(|| crate::StoreError::internal(format!("meta {key} vanished")))
}

pub(super) fn revoke_session(conn: &Connection, id: &str, expires_at: i64, now: i64) -> Result<()> {
    conn.prepare_cached("DELETE FROM revoked_sessions WHERE expires_at <= ?1")?
        .execute([now])?;
    conn.prepare_cached(
        "INSERT INTO revoked_sessions (id, expires_at) VALUES (?1, ?2)
         ON CONFLICT (id) DO UPDATE SET expires_at = max(expires_at, excluded.expires_at)",
    )?
    .execute(params![id, expires_at])?;
    Ok(())
}

pub(super) fn session_revoked(conn: &Connection, id: &str) -> Result<bool> {
    let mut stmt = conn.prepare_cached("SELECT 1 FROM revoked_sessions WHERE id = ?1")?;
    Ok(stmt.exists([id])?)
}

fn source_row(row: &Row<'_>) -> rusqlite::Result<Source> {
    Ok(Source {
        id: row.get(0)?,
        name: row.get(1)?,
        enabled: row.get(2)?,
        write_key_hash: row.get(3)?,
        write_key_hint: row.get(4)?,
        created_at: time(row, 5)?,
        updated_at: time(row, 6)?,
    })
}

pub(super) fn create_source(
    conn: &Connection,
    new: NewSource,
    now: DateTime<Utc>,
) -> Result<Source> {
    conn.prepare_cached(
        "INSERT INTO sources (id, name, enabled, write_key_hash, write_key_hint, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)",
    )?
    .execute(params![
        new.id,
        new.name,
        new.enabled,
        new.write_key_hash,
        new.write_key_hint,
        ms(now)
    ])
    .map_err(|e| conflict_or_backend(e, format!("source {} or its write key exists", new.id)))?;
    Ok(Source {
        id: new.id,
        name: new.name,
        enabled: new.enabled,
        write_key_hash: new.write_key_hash,
        write_key_hint: new.write_key_hint,
        created_at: now,
        updated_at: now,
    })
}

pub(super) fn list_sources(conn: &Connection) -> Result<Vec<Source>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {SOURCE_COLUMNS} FROM sources ORDER BY created_at, id"
    ))?;
    let rows = stmt.query_map([], source_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

pub(super) fn get_source(conn: &Connection, id: &str) -> Result<Option<Source>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {SOURCE_COLUMNS} FROM sources WHERE id = ?1"
    ))?;
    Ok(stmt.query_row([id], source_row).optional()?)
}

pub(super) fn get_source_by_key_hash(conn: &Connection, hash: &str) -> Result<Option<Source>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {SOURCE_COLUMNS} FROM sources WHERE write_key_hash = ?1"
    ))?;
    Ok(stmt.query_row([hash], source_row).optional()?)
}

pub(super) fn update_source(
    conn: &Connection,
    id: &str,
    patch: SourcePatch,
    now: DateTime<Utc>,
) -> Result<Option<Source>> {
    let Some(mut source) = get_source(conn, id)? else {
        return Ok(None);
    };
    patch.apply(&mut source, now);
    conn.prepare_cached(
        "UPDATE sources SET name = ?2, enabled = ?3, write_key_hash = ?4, write_key_hint = ?5,
         updated_at = ?6 WHERE id = ?1",
    )?
    .execute(params![
        source.id,
        source.name,
        source.enabled,
        source.write_key_hash,
        source.write_key_hint,
        ms(now)
    ])
    .map_err(|e| conflict_or_backend(e, "write key is in use by another source"))?;
    Ok(Some(source))
}

/// Deletes the source, its connections and its usage; events stay until
/// retention removes them.
/// Tables holding rows of one source by `source_id`, deleted with it.
const SOURCE_OWNED: [&str; 6] = [
    "usage",
    "usage_blocked",
    "source_rules",
    "schema_entries",
    "schema_volumes",
    "schema_overflow",
];

pub(super) fn delete_source(conn: &Connection, id: &str) -> Result<bool> {
    let deleted = conn
        .prepare_cached("DELETE FROM sources WHERE id = ?1")?
        .execute([id])?;
    conn.prepare_cached("DELETE FROM destination_sources WHERE source_id = ?1")?
        .execute([id])?;
    // Its usage, rules and observed schema go with it (see SOURCE_OWNED).
    for table in SOURCE_OWNED {
        conn.prepare_cached(&format!("DELETE FROM {table} WHERE source_id = ?1"))?
            .execute([id])?;
    }
    Ok(deleted > 0)
}
