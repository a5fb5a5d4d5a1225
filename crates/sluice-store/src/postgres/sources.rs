//! Service settings (`meta`) and sources.

use chrono::{DateTime, Utc};
use deadpool_postgres::{Client, GenericClient};
use tokio_postgres::Row;

use super::rows::{backend, conflict_or_backend, get, ms, time};
use crate::{NewSource, Result, Source, SourcePatch, StoreError};

const SOURCE_COLUMNS: &str =
    "id, name, enabled, write_key_hash, write_key_hint, created_at, updated_at";

pub(super) async fn get_meta(client: &impl GenericClient, key: &str) -> Result<Option<String>> {
    let stmt = client
        .prepare_cached("SELECT value FROM meta WHERE key = $1")
        .await
        .map_err(backend)?;
    let row = client.query_opt(&stmt, &[&key]).await.map_err(backend)?;
    row.map(|r| get(&r, 0)).transpose()
}

/// Two statements on purpose: under READ COMMITTED the `SELECT` takes a new
/// snapshot, so it sees a value another node committed while the `INSERT`
/// waited on it. (A single statement would read its own, older snapshot.)
pub(super) async fn put_meta_if_absent(client: &Client, key: &str, value: &str) -> Result<String> {
    let stmt = client
        .prepare_cached(
            "INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING",
        )
        .await
        .map_err(backend)?;
    client
        .execute(&stmt, &[&key, &value])
        .await
        .map_err(backend)?;
    get_meta(client, key)
        .await?
        .ok_or_else(|| StoreError::internal(format!("meta {key} vanished")))
}

pub(super) async fn revoke_session(
    client: &Client,
    id: &str,
    expires_at: i64,
    now: i64,
) -> Result<()> {
    let prune = client
        .prepare_cached("DELETE FROM revoked_sessions WHERE expires_at <= $1")
        .await
        .map_err(backend)?;
    client.execute(&prune, &[&now]).await.map_err(backend)?;
    let stmt = client
        .prepare_cached(
            "INSERT INTO revoked_sessions (id, expires_at) VALUES ($1, $2)
             ON CONFLICT (id) DO UPDATE
             SET expires_at = GREATEST(revoked_sessions.expires_at, EXCLUDED.expires_at)",
        )
        .await
        .map_err(backend)?;
    client
        .execute(&stmt, &[&id, &expires_at])
        .await
        .map_err(backend)?;
    Ok(())
}

pub(super) async fn session_revoked(client: &impl GenericClient, id: &str) -> Result<bool> {
    let stmt = client
        .prepare_cached("SELECT 1 FROM revoked_sessions WHERE id = $1")
        .await
        .map_err(backend)?;
    Ok(client
        .query_opt(&stmt, &[&id])
        .await
        .map_err(backend)?
        .is_some())
}

fn source_row(row: &Row) -> Result<Source> {
    Ok(Source {
        id: get(row, 0)?,
        name: get(row, 1)?,
        enabled: get(row, 2)?,
        write_key_hash: get(row, 3)?,
        write_key_hint: get(row, 4)?,
        created_at: time(row, 5)?,
        updated_at: time(row, 6)?,
    })
}

pub(super) async fn create_source(
    client: &Client,
    new: NewSource,
    now: DateTime<Utc>,
) -> Result<Source> {
    let stmt = client
        .prepare_cached(
            "INSERT INTO sources (id, name, enabled, write_key_hash, write_key_hint, created_at,
                                  updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $6)",
        )
        .await
        .map_err(backend)?;
    client
        .execute(
            &stmt,
            &[
                &new.id,
                &new.name,
                &new.enabled,
                &new.write_key_hash,
                &new.write_key_hint,
                &ms(now),
            ],
        )
        .await
        .map_err(|e| {
            conflict_or_backend(e, format!("source {} or its write key exists", new.id))
        })?;
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

pub(super) async fn list_sources(client: &Client) -> Result<Vec<Source>> {
    let stmt = client
        .prepare_cached(&format!(
            "SELECT {SOURCE_COLUMNS} FROM sources ORDER BY created_at, id"
        ))
        .await
        .map_err(backend)?;
    let rows = client.query(&stmt, &[]).await.map_err(backend)?;
    rows.iter().map(source_row).collect()
}

/// One source by `column` (`id` or `write_key_hash`), optionally locking it.
async fn source_by(
    client: &impl GenericClient,
    column: &str,
    value: &str,
    lock: bool,
) -> Result<Option<Source>> {
    let suffix = if lock { " FOR UPDATE" } else { "" };
    let stmt = client
        .prepare_cached(&format!(
            "SELECT {SOURCE_COLUMNS} FROM sources WHERE {column} = $1{suffix}"
        ))
        .await
        .map_err(backend)?;
    let row = client.query_opt(&stmt, &[&value]).await.map_err(backend)?;
    row.as_ref().map(source_row).transpose()
}

pub(super) async fn get_source(client: &Client, id: &str) -> Result<Option<Source>> {
    source_by(client, "id", id, false).await
}

pub(super) async fn get_source_by_key_hash(client: &Client, hash: &str) -> Result<Option<Source>> {
    source_by(client, "write_key_hash", hash, false).await
}

/// Read-modify-write under a row lock, so concurrent patches from several
/// nodes apply one after the other instead of overwriting each other.
pub(super) async fn update_source(
    client: &mut Client,
    id: &str,
    patch: SourcePatch,
    now: DateTime<Utc>,
) -> Result<Option<Source>> {
    let tx = client.transaction().await.map_err(backend)?;
    let Some(mut source) = source_by(&tx, "id", id, true).await? else {
        return Ok(None);
    };
    patch.apply(&mut source, now);
    let stmt = tx
        .prepare_cached(
            "UPDATE sources SET name = $2, enabled = $3, write_key_hash = $4, write_key_hint = $5,
             updated_at = $6 WHERE id = $1",
        )
        .await
        .map_err(backend)?;
    tx.execute(
        &stmt,
        &[
            &source.id,
            &source.name,
            &source.enabled,
            &source.write_key_hash,
            &source.write_key_hint,
            &ms(now),
        ],
    )
    .await
    .map_err(|e| conflict_or_backend(e, "write key is in use by another source"))?;
    tx.commit().await.map_err(backend)?;
    Ok(Some(source))
}

/// Deletes the source, its connections and its usage in one transaction;
/// events stay until retention removes them.
/// Tables holding rows of one source by `source_id`, deleted with it.
const SOURCE_OWNED: [&str; 6] = [
    "usage",
    "usage_blocked",
    "source_rules",
    "schema_entries",
    "schema_volumes",
    "schema_overflow",
];

pub(super) async fn delete_source(client: &mut Client, id: &str) -> Result<bool> {
    let tx = client.transaction().await.map_err(backend)?;
    let deleted = tx
        .execute("DELETE FROM sources WHERE id = $1", &[&id])
        .await
        .map_err(backend)?;
    tx.execute(
        "DELETE FROM destination_sources WHERE source_id = $1",
        &[&id],
    )
    .await
    .map_err(backend)?;
    // Its usage, rules and observed schema go with it (see SOURCE_OWNED).
    for table in SOURCE_OWNED {
        tx.execute(&format!("DELETE FROM {table} WHERE source_id = $1"), &[&id])
            .await
            .map_err(backend)?;
    }
    tx.commit().await.map_err(backend)?;
    Ok(deleted > 0)
}
