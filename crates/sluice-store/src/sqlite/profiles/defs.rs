//! Definitions (`computations`), their jobs and their stored values.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::super::rows::{conflict_or_backend, count, ms, opt_time, sql_limit, time};
use crate::{Computation, ComputationPatch, ComputedValue, NewComputation, Result, StoreError};

pub(super) const COLUMNS: &str =
    "id, class, key, name, definition, destination_ids, revision, messages_sent,
     last_computed_at, created_at, updated_at, deleted_at";

pub(super) fn row_to_computation(row: &Row<'_>) -> rusqlite::Result<(Computation, String)> {
    let destinations: String = row.get(5)?;
    Ok((
        Computation {
            id: row.get(0)?,
            class: row.get(1)?,
            key: row.get(2)?,
            name: row.get(3)?,
            definition: row.get(4)?,
            destination_ids: Vec::new(),
            revision: row.get(6)?,
            messages_sent: count(row, 7)?,
            last_computed_at: opt_time(row, 8)?,
            created_at: time(row, 9)?,
            updated_at: time(row, 10)?,
            deleted_at: opt_time(row, 11)?,
        },
        destinations,
    ))
}

pub(super) fn finish((mut c, destinations): (Computation, String)) -> Result<Computation> {
    c.destination_ids = serde_json::from_str(&destinations)
        .map_err(|e| StoreError::Backend(format!("computation destinations: {e}")))?;
    Ok(c)
}

fn sorted(mut ids: Vec<String>) -> Vec<String> {
    ids.sort();
    ids.dedup();
    ids
}

fn to_json(ids: &[String]) -> String {
    serde_json::to_string(ids).unwrap_or_else(|_| "[]".into())
}

pub(in crate::sqlite) fn queue_job(
    conn: &Connection,
    computation_id: &str,
    kind: &str,
    destination_id: Option<&str>,
) -> Result<()> {
    conn.prepare_cached(
        "INSERT INTO profile_jobs (computation_id, kind, destination_id) VALUES (?1, ?2, ?3)",
    )?
    .execute(params![computation_id, kind, destination_id])?;
    Ok(())
}

pub(super) fn create(
    conn: &Connection,
    new: NewComputation,
    now: DateTime<Utc>,
) -> Result<Computation> {
    let destinations = sorted(new.destination_ids);
    conn.prepare_cached(
        "INSERT INTO computations (id, class, key, name, definition, destination_ids, revision,
                                   created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, 1, ?7, ?7)",
    )?
    .execute(params![
        new.id,
        new.class,
        new.key,
        new.name,
        new.definition,
        to_json(&destinations),
        ms(now)
    ])
    .map_err(|e| conflict_or_backend(e, format!("key {:?} is taken", new.key)))?;
    queue_job(conn, &new.id, "recompute", None)?;
    get(conn, &new.id)?.ok_or_else(|| StoreError::Backend("created row vanished".into()))
}

pub(super) fn list(conn: &Connection) -> Result<Vec<Computation>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM computations WHERE deleted_at IS NULL ORDER BY created_at, id"
    ))?;
    let rows = stmt
        .query_map([], row_to_computation)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    rows.into_iter().map(finish).collect()
}

pub(super) fn get(conn: &Connection, id: &str) -> Result<Option<Computation>> {
    let row = conn
        .prepare_cached(&format!("SELECT {COLUMNS} FROM computations WHERE id = ?1"))?
        .query_row(params![id], row_to_computation)
        .optional()?;
    row.map(finish).transpose()
}

pub(super) fn update(
    conn: &Connection,
    id: &str,
    patch: ComputationPatch,
    now: DateTime<Utc>,
) -> Result<Option<Computation>> {
    let Some(mut current) = get(conn, id)?.filter(|c| c.deleted_at.is_none()) else {
        return Ok(None);
    };
    // Prepared window changes follow the old definition or destinations.
    super::scheduled::cancel_computation(conn, id)?;
    if let Some(name) = patch.name {
        current.name = name;
    }
    if let Some(definition) = patch.definition.filter(|d| *d != current.definition) {
        current.definition = definition;
        current.revision += 1;
        queue_job(conn, id, "recompute", None)?;
    }
    if let Some(destinations) = patch.destination_ids {
        let destinations = sorted(destinations);
        for added in destinations
            .iter()
            .filter(|d| !current.destination_ids.contains(d))
        {
            queue_job(conn, id, "backfill", Some(added))?;
        }
        current.destination_ids = destinations;
    }
    conn.prepare_cached(
        "UPDATE computations SET name = ?2, definition = ?3, destination_ids = ?4,
         revision = ?5, updated_at = ?6 WHERE id = ?1",
    )?
    .execute(params![
        id,
        current.name,
        current.definition,
        to_json(&current.destination_ids),
        current.revision,
        ms(now)
    ])?;
    get(conn, id)
}

pub(super) fn delete(conn: &Connection, id: &str, now: DateTime<Utc>) -> Result<bool> {
    let n = conn
        .prepare_cached(
            "UPDATE computations SET deleted_at = ?2, updated_at = ?2
             WHERE id = ?1 AND deleted_at IS NULL",
        )?
        .execute(params![id, ms(now)])?;
    super::scheduled::cancel_computation(conn, id)?;
    conn.prepare_cached("DELETE FROM computed_values WHERE computation_id = ?1")?
        .execute(params![id])?;
    conn.prepare_cached("DELETE FROM profile_jobs WHERE computation_id = ?1")?
        .execute(params![id])?;
    Ok(n > 0)
}

/// Takes a deleted destination out of every computation: its
/// `destination_ids`, its send counts and the backfills still to run for
/// it (as a deleted source leaves destinations' `source_ids`).
/// `messages_sent` keeps counting what was sent to it.
pub(in crate::sqlite) fn forget_destination(conn: &Connection, destination: &str) -> Result<()> {
    let rows: Vec<(String, String)> = conn
        .prepare_cached(
            "SELECT c.id, c.destination_ids FROM computations c
             WHERE EXISTS (SELECT 1 FROM json_each(c.destination_ids) j WHERE j.value = ?1)",
        )?
        .query_map(params![destination], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (id, list) in rows {
        let mut ids: Vec<String> = serde_json::from_str(&list)
            .map_err(|e| StoreError::Backend(format!("computation destinations: {e}")))?;
        ids.retain(|d| d != destination);
        conn.prepare_cached("UPDATE computations SET destination_ids = ?2 WHERE id = ?1")?
            .execute(params![id, to_json(&ids)])?;
    }
    conn.prepare_cached("DELETE FROM computation_sends WHERE destination_id = ?1")?
        .execute(params![destination])?;
    conn.prepare_cached(
        "DELETE FROM profile_jobs WHERE kind = 'backfill' AND destination_id = ?1",
    )?
    .execute(params![destination])?;
    Ok(())
}

/// Gives a destination that starts receiving (enabled after being
/// disabled) a first sync of its own from every live computation connected
/// to it: a backfill of every stored value, as on connecting, replacing one
/// still queued. What it was sent before it was switched off may have been
/// discarded, and what was computed meanwhile was not sent to it at all.
/// Prepared window changes are withdrawn, as on connecting: their messages
/// were made without it.
pub(in crate::sqlite) fn resync_destination(conn: &Connection, destination: &str) -> Result<()> {
    let ids: Vec<String> = conn
        .prepare_cached(
            "SELECT c.id FROM computations c WHERE c.deleted_at IS NULL
             AND EXISTS (SELECT 1 FROM json_each(c.destination_ids) j WHERE j.value = ?1)
             ORDER BY c.id",
        )?
        .query_map(params![destination], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for id in ids {
        super::scheduled::cancel_computation(conn, &id)?;
        conn.prepare_cached(
            "DELETE FROM profile_jobs
             WHERE computation_id = ?1 AND kind = 'backfill' AND destination_id = ?2",
        )?
        .execute(params![id, destination])?;
        queue_job(conn, &id, "backfill", Some(destination))?;
    }
    Ok(())
}

pub(super) fn list_values(
    conn: &Connection,
    computation_id: &str,
    after: &str,
    limit: u32,
) -> Result<Vec<ComputedValue>> {
    let mut stmt = conn.prepare_cached(
        "SELECT computation_id, profile_id, value FROM computed_values
         WHERE computation_id = ?1 AND profile_id > ?2 ORDER BY profile_id LIMIT ?3",
    )?;
    let rows = stmt.query_map(params![computation_id, after, sql_limit(limit)], value_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

pub(super) fn count_values(conn: &Connection, computation_id: &str) -> Result<u64> {
    let n: i64 = conn
        .prepare_cached("SELECT count(*) FROM computed_values WHERE computation_id = ?1")?
        .query_row(params![computation_id], |r| r.get(0))?;
    Ok(u64::try_from(n).unwrap_or(0))
}

pub(super) fn value_row(row: &Row<'_>) -> rusqlite::Result<ComputedValue> {
    Ok(ComputedValue {
        computation_id: row.get(0)?,
        profile_id: row.get(1)?,
        value: row.get(2)?,
    })
}

pub(super) fn sends(conn: &Connection, computation_id: &str) -> Result<Vec<(String, u64)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT destination_id, sent FROM computation_sends WHERE computation_id = ?1
         ORDER BY destination_id",
    )?;
    let rows = stmt.query_map(params![computation_id], |r| Ok((r.get(0)?, count(r, 1)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
