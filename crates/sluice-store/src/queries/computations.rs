//! Personas definitions (`computations`), their jobs and their stored
//! values. The profile engine's step, with its prepared window changes,
//! stays per backend; what a definition change must do to those changes
//! goes through [`ProfileLinks::cancel_computation`].
//!
//! On PostgreSQL, writers lock the computation rows they rely on first, in
//! id order, as an engine step does (see `postgres/profiles/scheduled.rs`),
//! so an edit and a step never deadlock.

use chrono::{DateTime, Utc};

use crate::sql::{Conn, Db, ProfileLinks, Row, Tx, args, conflict, limit};
use crate::{Computation, ComputationPatch, ComputedValue, NewComputation, Result, StoreError};

pub(super) const COLUMNS: &str =
    "id, class, key, name, definition, destination_ids, revision, messages_sent,
     last_computed_at, created_at, updated_at, deleted_at";

pub(super) fn computation(mut row: Row) -> Result<Computation> {
    let destinations: String = row.take(5)?;
    Ok(Computation {
        id: row.take(0)?,
        class: row.take(1)?,
        key: row.take(2)?,
        name: row.take(3)?,
        definition: row.take(4)?,
        destination_ids: serde_json::from_str(&destinations)?,
        revision: row.get(6)?,
        messages_sent: row.get(7)?,
        last_computed_at: row.get(8)?,
        created_at: row.get(9)?,
        updated_at: row.get(10)?,
        deleted_at: row.get(11)?,
    })
}

/// A `computed_values` row selected as (computation, profile, value).
pub(super) fn computed_value(mut r: Row) -> Result<ComputedValue> {
    Ok(ComputedValue {
        computation_id: r.take(0)?,
        profile_id: r.take(1)?,
        value: r.take(2)?,
    })
}

fn sorted(mut ids: Vec<String>) -> Vec<String> {
    ids.sort();
    ids.dedup();
    ids
}

fn to_json(ids: &[String]) -> Result<String> {
    Ok(serde_json::to_string(ids)?)
}

async fn queue_job(
    db: &impl Db,
    computation_id: &str,
    kind: &str,
    destination_id: Option<&str>,
) -> Result<()> {
    db.execute(
        "INSERT INTO profile_jobs (computation_id, kind, destination_id) VALUES ($1, $2, $3)",
        args![computation_id, kind, destination_id],
    )
    .await?;
    Ok(())
}

pub(crate) async fn create(
    conn: &mut impl Conn,
    new: NewComputation,
    now: DateTime<Utc>,
) -> Result<Computation> {
    let destinations = to_json(&sorted(new.destination_ids))?;
    let tx = conn.begin().await?;
    tx.execute(
        "INSERT INTO computations (id, class, key, name, definition, destination_ids, revision,
                                   created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, 1, $7, $7)",
        args![
            &new.id,
            &new.class,
            &new.key,
            &new.name,
            &new.definition,
            &destinations,
            now
        ],
    )
    .await
    .map_err(conflict(format!("key {:?} is taken", new.key)))?;
    queue_job(&tx, &new.id, "recompute", None).await?;
    let created = get(&tx, &new.id).await?;
    tx.commit().await?;
    created.ok_or_else(|| StoreError::internal("created row vanished"))
}

pub(crate) async fn list(db: &impl Db) -> Result<Vec<Computation>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM computations WHERE deleted_at IS NULL ORDER BY created_at, id"
    );
    db.query_map(&sql, args![], computation).await
}

pub(crate) async fn get(db: &impl Db, id: &str) -> Result<Option<Computation>> {
    let sql = format!("SELECT {COLUMNS} FROM computations WHERE id = $1");
    db.query_opt(&sql, args![id])
        .await?
        .map(computation)
        .transpose()
}

pub(crate) async fn update(
    conn: &mut impl Conn,
    id: &str,
    patch: ComputationPatch,
    now: DateTime<Utc>,
) -> Result<Option<Computation>> {
    let tx = conn.begin().await?;
    let sql = format!(
        "SELECT {COLUMNS} FROM computations WHERE id = $1 AND deleted_at IS NULL{}",
        tx.dialect().for_update()
    );
    let Some(mut current) = tx
        .query_opt(&sql, args![id])
        .await?
        .map(computation)
        .transpose()?
    else {
        return Ok(None);
    };
    // Prepared window changes follow the old definition or destinations.
    tx.cancel_computation(id).await?;
    if let Some(name) = patch.name {
        current.name = name;
    }
    if let Some(definition) = patch.definition.filter(|d| *d != current.definition) {
        current.definition = definition;
        current.revision += 1;
        queue_job(&tx, id, "recompute", None).await?;
    }
    if let Some(destinations) = patch.destination_ids {
        let destinations = sorted(destinations);
        for added in destinations
            .iter()
            .filter(|d| !current.destination_ids.contains(d))
        {
            queue_job(&tx, id, "backfill", Some(added)).await?;
        }
        current.destination_ids = destinations;
    }
    tx.execute(
        "UPDATE computations SET name = $2, definition = $3, destination_ids = $4,
         revision = $5, updated_at = $6 WHERE id = $1",
        args![
            id,
            &current.name,
            &current.definition,
            &to_json(&current.destination_ids)?,
            current.revision,
            now
        ],
    )
    .await?;
    let updated = get(&tx, id).await?;
    tx.commit().await?;
    Ok(updated)
}

pub(crate) async fn delete(conn: &mut impl Conn, id: &str, now: DateTime<Utc>) -> Result<bool> {
    let tx = conn.begin().await?;
    let n = tx
        .execute(
            "UPDATE computations SET deleted_at = $2, updated_at = $2
             WHERE id = $1 AND deleted_at IS NULL",
            args![id, now],
        )
        .await?;
    tx.cancel_computation(id).await?;
    for sql in [
        "DELETE FROM computed_values WHERE computation_id = $1",
        "DELETE FROM profile_jobs WHERE computation_id = $1",
    ] {
        tx.execute(sql, args![id]).await?;
    }
    tx.commit().await?;
    Ok(n > 0)
}

/// The live computations connected to `destination`, locked in id order.
async fn connected_to(
    db: &impl Db,
    destination: &str,
    live: bool,
) -> Result<Vec<(String, String)>> {
    let d = db.dialect();
    let sql = format!(
        "SELECT id, destination_ids FROM computations WHERE {} {} ORDER BY id{}",
        d.json_array_has("destination_ids", "$1"),
        if live { "AND deleted_at IS NULL" } else { "" },
        d.for_no_key_update()
    );
    db.query_map(&sql, args![destination], |mut r| {
        Ok((r.take(0)?, r.take(1)?))
    })
    .await
}

/// Takes a deleted destination out of every computation: its
/// `destination_ids`, its send counts and the backfills still to run for
/// it (as a deleted source leaves destinations' `source_ids`).
/// `messages_sent` keeps counting what was sent to it. The caller discards
/// the destination's deliveries only after (the lock order of a step).
pub(crate) async fn forget_destination(db: &impl Db, destination: &str) -> Result<()> {
    for (id, list) in connected_to(db, destination, false).await? {
        let mut ids: Vec<String> = serde_json::from_str(&list)?;
        ids.retain(|d| d != destination);
        db.execute(
            "UPDATE computations SET destination_ids = $2 WHERE id = $1",
            args![&id, &to_json(&ids)?],
        )
        .await?;
    }
    for sql in [
        "DELETE FROM computation_sends WHERE destination_id = $1",
        "DELETE FROM profile_jobs WHERE kind = 'backfill' AND destination_id = $1",
    ] {
        db.execute(sql, args![destination]).await?;
    }
    Ok(())
}

/// Gives a destination that starts receiving (enabled after being
/// disabled) a first sync of its own from every live computation connected
/// to it: a backfill of every stored value, as on connecting, replacing one
/// still queued. What it was sent before it was switched off may have been
/// discarded, and what was computed meanwhile was not sent to it at all.
/// Prepared window changes are withdrawn, as on connecting: their messages
/// were made without it. The computations are locked first, so a step that
/// read the destination as disabled commits before the backfill is queued.
pub(crate) async fn resync_destination(
    db: &(impl Db + ProfileLinks),
    destination: &str,
) -> Result<()> {
    for (id, _) in connected_to(db, destination, true).await? {
        db.cancel_computation(&id).await?;
        db.execute(
            "DELETE FROM profile_jobs
             WHERE computation_id = $1 AND kind = 'backfill' AND destination_id = $2",
            args![&id, destination],
        )
        .await?;
        queue_job(db, &id, "backfill", Some(destination)).await?;
    }
    Ok(())
}

pub(crate) async fn list_values(
    db: &impl Db,
    computation_id: &str,
    after: &str,
    count: u32,
) -> Result<Vec<ComputedValue>> {
    db.query_map(
        "SELECT computation_id, profile_id, value FROM computed_values
         WHERE computation_id = $1 AND profile_id > $2 ORDER BY profile_id LIMIT $3",
        args![computation_id, after, limit(count)],
        computed_value,
    )
    .await
}

pub(crate) async fn count_values(db: &impl Db, computation_id: &str) -> Result<u64> {
    db.query_one(
        "SELECT count(*) FROM computed_values WHERE computation_id = $1",
        args![computation_id],
    )
    .await?
    .get(0)
}

pub(crate) async fn sends(db: &impl Db, computation_id: &str) -> Result<Vec<(String, u64)>> {
    db.query_map(
        "SELECT destination_id, sent FROM computation_sends WHERE computation_id = $1
         ORDER BY destination_id",
        args![computation_id],
        |mut r| Ok((r.take(0)?, r.get(1)?)),
    )
    .await
}
