//! Service settings (`meta`), revoked dashboard sessions, and sources.

use chrono::{DateTime, Utc};

use crate::sql::{Conn, Db, Row, Tx, args, conflict};
use crate::{NewSource, Result, Source, SourcePatch, StoreError};

const SOURCE_COLUMNS: &str =
    "id, name, enabled, write_key_hash, write_key_hint, created_at, updated_at";

/// Tables holding rows of one source by `source_id`, deleted with it.
const SOURCE_OWNED: [&str; 6] = [
    "usage",
    "usage_blocked",
    "source_rules",
    "schema_entries",
    "schema_volumes",
    "schema_overflow",
];

pub(crate) async fn get_meta(db: &impl Db, key: &str) -> Result<Option<String>> {
    let row = db
        .query_opt("SELECT value FROM meta WHERE key = $1", args![key])
        .await?;
    row.map(|r| r.get(0)).transpose()
}

/// Two statements on purpose: on PostgreSQL under READ COMMITTED the
/// `SELECT` takes a new snapshot, so it sees a value another node committed
/// while the `INSERT` waited on it (one statement would read its own, older
/// snapshot).
pub(crate) async fn put_meta_if_absent(db: &impl Db, key: &str, value: &str) -> Result<String> {
    db.execute(
        "INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING",
        args![key, value],
    )
    .await?;
    get_meta(db, key)
        .await?
        .ok_or_else(|| StoreError::internal(format!("meta {key} vanished")))
}

/// Records a revoked session until it would have expired anyway, pruning
/// the ones past that.
pub(crate) async fn revoke_session(
    db: &impl Db,
    id: &str,
    expires_at: i64,
    now: i64,
) -> Result<()> {
    db.execute(
        "DELETE FROM revoked_sessions WHERE expires_at <= $1",
        args![now],
    )
    .await?;
    let greatest = db.dialect().greatest();
    db.execute(
        &format!(
            "INSERT INTO revoked_sessions (id, expires_at) VALUES ($1, $2)
             ON CONFLICT (id) DO UPDATE
             SET expires_at = {greatest}(revoked_sessions.expires_at, excluded.expires_at)"
        ),
        args![id, expires_at],
    )
    .await?;
    Ok(())
}

pub(crate) async fn session_revoked(db: &impl Db, id: &str) -> Result<bool> {
    db.exists("SELECT 1 FROM revoked_sessions WHERE id = $1", args![id])
        .await
}

fn source(mut row: Row) -> Result<Source> {
    Ok(Source {
        id: row.take(0)?,
        name: row.take(1)?,
        enabled: row.get(2)?,
        write_key_hash: row.take(3)?,
        write_key_hint: row.take(4)?,
        created_at: row.get(5)?,
        updated_at: row.get(6)?,
    })
}

pub(crate) async fn create_source(
    db: &impl Db,
    new: NewSource,
    now: DateTime<Utc>,
) -> Result<Source> {
    db.execute(
        "INSERT INTO sources (id, name, enabled, write_key_hash, write_key_hint, created_at,
                              updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $6)",
        args![
            &new.id,
            &new.name,
            new.enabled,
            &new.write_key_hash,
            &new.write_key_hint,
            now
        ],
    )
    .await
    .map_err(conflict(format!(
        "source {} or its write key exists",
        new.id
    )))?;
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

pub(crate) async fn list_sources(db: &impl Db) -> Result<Vec<Source>> {
    let sql = format!("SELECT {SOURCE_COLUMNS} FROM sources ORDER BY created_at, id");
    db.query_map(&sql, args![], source).await
}

/// One source by `column` (`id` or `write_key_hash`), locked until commit
/// when `lock` (PostgreSQL; SQLite's single writer needs no lock).
async fn source_by(db: &impl Db, column: &str, value: &str, lock: bool) -> Result<Option<Source>> {
    let suffix = if lock { db.dialect().for_update() } else { "" };
    let sql = format!("SELECT {SOURCE_COLUMNS} FROM sources WHERE {column} = $1{suffix}");
    db.query_opt(&sql, args![value])
        .await?
        .map(source)
        .transpose()
}

pub(crate) async fn get_source(db: &impl Db, id: &str) -> Result<Option<Source>> {
    source_by(db, "id", id, false).await
}

pub(crate) async fn get_source_by_key_hash(db: &impl Db, hash: &str) -> Result<Option<Source>> {
    source_by(db, "write_key_hash", hash, false).await
}

/// Read-modify-write under a row lock, so concurrent patches from several
/// nodes apply one after the other instead of overwriting each other.
pub(crate) async fn update_source(
    conn: &mut impl Conn,
    id: &str,
    patch: SourcePatch,
    now: DateTime<Utc>,
) -> Result<Option<Source>> {
    let tx = conn.begin().await?;
    let Some(mut source) = source_by(&tx, "id", id, true).await? else {
        return Ok(None);
    };
    patch.apply(&mut source, now);
    tx.execute(
        "UPDATE sources SET name = $2, enabled = $3, write_key_hash = $4, write_key_hint = $5,
         updated_at = $6 WHERE id = $1",
        args![
            &source.id,
            &source.name,
            source.enabled,
            &source.write_key_hash,
            &source.write_key_hint,
            now
        ],
    )
    .await
    .map_err(conflict("write key is in use by another source"))?;
    tx.commit().await?;
    Ok(Some(source))
}

/// Deletes the source, its connections, its usage, rules and observed
/// schema in one transaction; events stay until retention removes them.
pub(crate) async fn delete_source(conn: &mut impl Conn, id: &str) -> Result<bool> {
    let tx = conn.begin().await?;
    let deleted = tx
        .execute("DELETE FROM sources WHERE id = $1", args![id])
        .await?;
    tx.execute(
        "DELETE FROM destination_sources WHERE source_id = $1",
        args![id],
    )
    .await?;
    for table in SOURCE_OWNED {
        tx.execute(
            &format!("DELETE FROM {table} WHERE source_id = $1"),
            args![id],
        )
        .await?;
    }
    tx.commit().await?;
    Ok(deleted > 0)
}
