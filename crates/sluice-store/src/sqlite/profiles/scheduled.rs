//! `profile_scheduled`: window changes prepared ahead of their time
//! (version 9; see [`crate::profiles`]).
//!
//! A row is (profile, computation) → the value from `at` on and the event
//! seq of its message, whose deliveries are due at `at`. Withdrawing a row
//! deletes its deliveries that no worker has taken, then the message
//! itself; a taken one either fails the engine's step (it is redone once
//! the change is due) or, for an administrative change, is left to go out.

use rusqlite::{Connection, OptionalExtension, params};

use super::super::rows::{ms, time};
use super::super::tombstones;
use crate::{Result, ScheduledChange, StoreError};

pub(in crate::sqlite) const SCHEMA_V9: &str = "
CREATE TABLE profile_scheduled (
    profile_id     TEXT NOT NULL,
    computation_id TEXT NOT NULL,
    at             INTEGER NOT NULL,
    value          TEXT,
    event_seq      INTEGER,
    PRIMARY KEY (profile_id, computation_id)
) WITHOUT ROWID;
CREATE INDEX profile_scheduled_at ON profile_scheduled (at);
CREATE INDEX profile_scheduled_computation ON profile_scheduled (computation_id);
";

/// The scheduled changes of one profile.
pub(super) fn of(conn: &Connection, profile_id: &str) -> Result<Vec<ScheduledChange>> {
    let mut stmt = conn.prepare_cached(
        "SELECT computation_id, at, value FROM profile_scheduled WHERE profile_id = ?1",
    )?;
    let rows = stmt.query_map(params![profile_id], |r| {
        Ok(ScheduledChange {
            computation_id: r.get(0)?,
            profile_id: profile_id.to_owned(),
            at: time(r, 1)?,
            value: r.get(2)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Profiles due after `now` and by `until`, without scheduled changes.
pub(super) fn due_ahead(
    conn: &Connection,
    now: i64,
    until: i64,
    limit: u32,
) -> Result<Vec<(String, chrono::DateTime<chrono::Utc>)>> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, next_change_at FROM profiles p
         WHERE next_change_at > ?1 AND next_change_at <= ?2
           AND NOT EXISTS (SELECT 1 FROM profile_scheduled s WHERE s.profile_id = p.id)
         ORDER BY next_change_at, id LIMIT ?3",
    )?;
    let rows = stmt.query_map(params![now, until, i64::from(limit)], |r| {
        Ok((r.get(0)?, time(r, 1)?))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Writes a value the way a step does: `None` deletes it; a deleted
/// computation gets none.
fn apply(conn: &Connection, computation: &str, profile: &str, value: Option<&str>) -> Result<()> {
    match value {
        Some(v) => {
            conn.prepare_cached(
                "INSERT INTO computed_values (computation_id, profile_id, value)
                 SELECT ?1, ?2, ?3 FROM computations WHERE id = ?1 AND deleted_at IS NULL
                 ON CONFLICT (computation_id, profile_id) DO UPDATE SET value = excluded.value",
            )?
            .execute(params![computation, profile, v])?;
        }
        None => {
            conn.prepare_cached(
                "DELETE FROM computed_values WHERE computation_id = ?1 AND profile_id = ?2",
            )?
            .execute(params![computation, profile])?;
        }
    }
    Ok(())
}

/// Withdraws the message `seq` of a scheduled change: its untaken
/// deliveries, its send counts and the event (the newest of each is left as
/// a tombstone, see `tombstones.rs`). With `strict`, a delivery
/// already taken by a worker fails the transaction.
fn withdraw(conn: &Connection, computation: &str, seq: i64, strict: bool) -> Result<()> {
    let untaken = "event_seq = ?1 AND state = 'pending' AND attempts = 0 AND lease_until IS NULL";
    let destinations: Vec<String> = conn
        .prepare_cached(&format!(
            "SELECT destination_id FROM deliveries WHERE {untaken}"
        ))?
        .query_map(params![seq], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let untaken_ids: Vec<i64> = conn
        .prepare_cached(&format!("SELECT id FROM deliveries WHERE {untaken}"))?
        .query_map(params![seq], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    for id in untaken_ids {
        tombstones::delete_delivery(conn, id)?;
    }
    let taken: i64 = conn
        .prepare_cached("SELECT count(*) FROM deliveries WHERE event_seq = ?1")?
        .query_row(params![seq], |r| r.get(0))?;
    if taken > 0 && strict {
        return Err(StoreError::Conflict(
            "a scheduled message was already taken for delivery".into(),
        ));
    }
    if taken == 0 {
        // The message is often the newest event: its seq must stay taken.
        tombstones::delete_event(conn, seq)?;
    }
    for d in &destinations {
        conn.prepare_cached(
            "UPDATE computation_sends SET sent = sent - 1
             WHERE computation_id = ?1 AND destination_id = ?2",
        )?
        .execute(params![computation, d])?;
    }
    let n = i64::try_from(destinations.len()).unwrap_or(i64::MAX);
    conn.prepare_cached(
        "UPDATE computations SET messages_sent = messages_sent - ?2 WHERE id = ?1",
    )?
    .execute(params![computation, n])?;
    Ok(())
}

/// Settles one profile's scheduled changes at `now` (a step touches it):
/// due ones are applied, later ones withdrawn, strictly.
pub(super) fn settle(conn: &Connection, profile: &str, now: i64) -> Result<()> {
    let rows: Vec<(String, i64, Option<String>, Option<i64>)> = conn
        .prepare_cached(
            "SELECT computation_id, at, value, event_seq FROM profile_scheduled
             WHERE profile_id = ?1",
        )?
        .query_map(params![profile], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    for (computation, at, value, seq) in &rows {
        if *at <= now {
            apply(conn, computation, profile, value.as_deref())?;
        } else if let Some(seq) = seq {
            withdraw(conn, computation, *seq, true)?;
        }
    }
    conn.prepare_cached("DELETE FROM profile_scheduled WHERE profile_id = ?1")?
        .execute(params![profile])?;
    Ok(())
}

/// Whether any change is due by `now`.
pub(super) fn any_due(conn: &Connection, now: i64) -> Result<bool> {
    Ok(conn
        .prepare_cached("SELECT 1 FROM profile_scheduled WHERE at <= ?1 LIMIT 1")?
        .query_row(params![now], |_| Ok(()))
        .optional()?
        .is_some())
}

/// Applies up to `limit` changes due by `now`; returns how many.
pub(super) fn settle_due(conn: &Connection, now: i64, limit: u32) -> Result<u64> {
    let rows: Vec<(String, String, Option<String>)> = conn
        .prepare_cached(
            "SELECT profile_id, computation_id, value FROM profile_scheduled
             WHERE at <= ?1 ORDER BY at LIMIT ?2",
        )?
        .query_map(params![now, i64::from(limit)], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    let mut drop = conn.prepare_cached(
        "DELETE FROM profile_scheduled WHERE profile_id = ?1 AND computation_id = ?2",
    )?;
    for (profile, computation, value) in &rows {
        apply(conn, computation, profile, value.as_deref())?;
        drop.execute(params![profile, computation])?;
    }
    Ok(rows.len() as u64)
}

/// Drops a computation's scheduled changes with their untaken messages
/// (the definition changed or is gone); each profile is due again at the
/// change's time, to be evaluated afresh.
pub(crate) fn cancel_computation(conn: &Connection, computation: &str) -> Result<()> {
    let rows: Vec<(String, i64, Option<i64>)> = conn
        .prepare_cached(
            "SELECT profile_id, at, event_seq FROM profile_scheduled WHERE computation_id = ?1",
        )?
        .query_map(params![computation], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })?
        .collect::<rusqlite::Result<_>>()?;
    for (profile, at, seq) in &rows {
        if let Some(seq) = seq {
            withdraw(conn, computation, *seq, false)?;
        }
        due_again(conn, profile, *at)?;
    }
    conn.prepare_cached("DELETE FROM profile_scheduled WHERE computation_id = ?1")?
        .execute(params![computation])?;
    Ok(())
}

/// Drops a removed profile's scheduled changes with their untaken messages.
pub(in crate::sqlite) fn remove_profile(conn: &Connection, profile: &str) -> Result<()> {
    let rows: Vec<(String, Option<i64>)> = conn
        .prepare_cached(
            "SELECT computation_id, event_seq FROM profile_scheduled WHERE profile_id = ?1",
        )?
        .query_map(params![profile], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<_>>()?;
    for (computation, seq) in &rows {
        if let Some(seq) = seq {
            withdraw(conn, computation, *seq, false)?;
        }
    }
    conn.prepare_cached("DELETE FROM profile_scheduled WHERE profile_id = ?1")?
        .execute(params![profile])?;
    Ok(())
}

/// Makes `profile` due again by `at`.
pub(in crate::sqlite) fn due_again(conn: &Connection, profile: &str, at: i64) -> Result<()> {
    conn.prepare_cached(
        "UPDATE profiles SET next_change_at = ?2
         WHERE id = ?1 AND (next_change_at IS NULL OR next_change_at > ?2)",
    )?
    .execute(params![profile, at])?;
    Ok(())
}

/// Writes a scheduled change whose message (if any) is event `seq`.
pub(super) fn insert(conn: &Connection, change: &ScheduledChange, seq: Option<i64>) -> Result<()> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO profile_scheduled
             (profile_id, computation_id, at, value, event_seq)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![
        change.profile_id,
        change.computation_id,
        ms(change.at),
        change.value,
        seq
    ])?;
    Ok(())
}

/// Whether the computation is live and last changed at `updated_at`.
pub(super) fn current(conn: &Connection, computation: &str, updated_at: i64) -> Result<bool> {
    Ok(conn
        .prepare_cached(
            "SELECT 1 FROM computations WHERE id = ?1 AND deleted_at IS NULL AND updated_at = ?2",
        )?
        .query_row(params![computation, updated_at], |_| Ok(()))
        .optional()?
        .is_some())
}
