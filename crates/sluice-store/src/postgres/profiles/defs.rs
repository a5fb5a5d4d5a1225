//! Definitions (`computations`), their jobs and their stored values.

use chrono::{DateTime, Utc};
use deadpool_postgres::GenericClient;
use tokio_postgres::Row;

use super::super::rows::{
    backend, conflict_or_backend, get, json_error, ms, opt_time, sql_limit, time, unsigned,
};
use crate::{Computation, ComputationPatch, ComputedValue, NewComputation, Result, StoreError};

pub(super) const COLUMNS: &str =
    "id, class, key, name, definition, destination_ids, revision, messages_sent,
     last_computed_at, created_at, updated_at, deleted_at";

pub(super) fn computation(row: &Row) -> Result<Computation> {
    let destinations: String = get(row, 5)?;
    Ok(Computation {
        id: get(row, 0)?,
        class: get(row, 1)?,
        key: get(row, 2)?,
        name: get(row, 3)?,
        definition: get(row, 4)?,
        destination_ids: serde_json::from_str(&destinations).map_err(json_error)?,
        revision: get(row, 6)?,
        messages_sent: unsigned(row, 7)?,
        last_computed_at: opt_time(row, 8)?,
        created_at: time(row, 9)?,
        updated_at: time(row, 10)?,
        deleted_at: opt_time(row, 11)?,
    })
}

fn sorted(mut ids: Vec<String>) -> Vec<String> {
    ids.sort();
    ids.dedup();
    ids
}

fn to_json(ids: &[String]) -> String {
    serde_json::to_string(ids).unwrap_or_else(|_| "[]".into())
}

async fn queue_job(
    c: &impl GenericClient,
    computation_id: &str,
    kind: &str,
    destination_id: Option<&str>,
) -> Result<()> {
    c.execute(
        "INSERT INTO profile_jobs (computation_id, kind, destination_id) VALUES ($1, $2, $3)",
        &[&computation_id, &kind, &destination_id],
    )
    .await
    .map_err(backend)?;
    Ok(())
}

pub(super) async fn create(
    client: &mut deadpool_postgres::Object,
    new: NewComputation,
    now: DateTime<Utc>,
) -> Result<Computation> {
    let tx = client.transaction().await.map_err(backend)?;
    let destinations = to_json(&sorted(new.destination_ids));
    tx.execute(
        "INSERT INTO computations (id, class, key, name, definition, destination_ids, revision,
                                   created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, 1, $7, $7)",
        &[
            &new.id,
            &new.class,
            &new.key,
            &new.name,
            &new.definition,
            &destinations,
            &ms(now),
        ],
    )
    .await
    .map_err(|e| conflict_or_backend(e, format!("key {:?} is taken", new.key)))?;
    queue_job(&tx, &new.id, "recompute", None).await?;
    let created = get_one(&tx, &new.id).await?;
    tx.commit().await.map_err(backend)?;
    created.ok_or_else(|| StoreError::Backend("created row vanished".into()))
}

pub(super) async fn list(c: &impl GenericClient) -> Result<Vec<Computation>> {
    let rows = c
        .query(
            &format!(
                "SELECT {COLUMNS} FROM computations WHERE deleted_at IS NULL
                 ORDER BY created_at, id"
            ),
            &[],
        )
        .await
        .map_err(backend)?;
    rows.iter().map(computation).collect()
}

pub(super) async fn get_one(c: &impl GenericClient, id: &str) -> Result<Option<Computation>> {
    let row = c
        .query_opt(
            &format!("SELECT {COLUMNS} FROM computations WHERE id = $1"),
            &[&id],
        )
        .await
        .map_err(backend)?;
    row.as_ref().map(computation).transpose()
}

/// Takes a deleted destination out of every computation, as
/// `sqlite/profiles/defs.rs` does. The computations are locked in id order
/// first, as an engine step locks them (see `scheduled.rs`), so the two
/// serialise without deadlock, and the caller discards the deliveries only
/// after.
pub(in crate::postgres) async fn forget_destination(
    c: &impl GenericClient,
    destination: &str,
) -> Result<()> {
    let rows = c
        .query(
            "SELECT id, destination_ids FROM computations
             WHERE destination_ids::jsonb ? $1 ORDER BY id FOR NO KEY UPDATE",
            &[&destination],
        )
        .await
        .map_err(backend)?;
    for row in &rows {
        let id: String = get(row, 0)?;
        let list: String = get(row, 1)?;
        let mut ids: Vec<String> = serde_json::from_str(&list).map_err(json_error)?;
        ids.retain(|d| d != destination);
        c.execute(
            "UPDATE computations SET destination_ids = $2 WHERE id = $1",
            &[&id, &to_json(&ids)],
        )
        .await
        .map_err(backend)?;
    }
    for sql in [
        "DELETE FROM computation_sends WHERE destination_id = $1",
        "DELETE FROM profile_jobs WHERE kind = 'backfill' AND destination_id = $1",
    ] {
        c.execute(sql, &[&destination]).await.map_err(backend)?;
    }
    Ok(())
}

/// Gives a destination that starts receiving (enabled after being
/// disabled) a first sync of its own, as `sqlite/profiles/defs.rs` does.
/// The computations are locked in id order first, as an engine step locks
/// them, so a step that read the destination as disabled commits before
/// the backfill is queued (and the backfill reads its values).
pub(in crate::postgres) async fn resync_destination(
    c: &impl GenericClient,
    destination: &str,
) -> Result<()> {
    let rows = c
        .query(
            "SELECT id FROM computations
             WHERE deleted_at IS NULL AND destination_ids::jsonb ? $1
             ORDER BY id FOR NO KEY UPDATE",
            &[&destination],
        )
        .await
        .map_err(backend)?;
    for row in &rows {
        let id: String = get(row, 0)?;
        super::scheduled::cancel_computation(c, &id).await?;
        c.execute(
            "DELETE FROM profile_jobs
             WHERE computation_id = $1 AND kind = 'backfill' AND destination_id = $2",
            &[&id, &destination],
        )
        .await
        .map_err(backend)?;
        queue_job(c, &id, "backfill", Some(destination)).await?;
    }
    Ok(())
}

pub(super) async fn update(
    client: &mut deadpool_postgres::Object,
    id: &str,
    patch: ComputationPatch,
    now: DateTime<Utc>,
) -> Result<Option<Computation>> {
    let tx = client.transaction().await.map_err(backend)?;
    let row = tx
        .query_opt(
            &format!(
                "SELECT {COLUMNS} FROM computations WHERE id = $1 AND deleted_at IS NULL FOR UPDATE"
            ),
            &[&id],
        )
        .await
        .map_err(backend)?;
    let Some(mut current) = row.as_ref().map(computation).transpose()? else {
        return Ok(None);
    };
    // Prepared window changes follow the old definition or destinations.
    super::scheduled::cancel_computation(&tx, id).await?;
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
        &[
            &id,
            &current.name,
            &current.definition,
            &to_json(&current.destination_ids),
            &current.revision,
            &ms(now),
        ],
    )
    .await
    .map_err(backend)?;
    let updated = get_one(&tx, id).await?;
    tx.commit().await.map_err(backend)?;
    Ok(updated)
}

pub(super) async fn delete(
    client: &mut deadpool_postgres::Object,
    id: &str,
    now: DateTime<Utc>,
) -> Result<bool> {
    let tx = client.transaction().await.map_err(backend)?;
    let n = tx
        .execute(
            "UPDATE computations SET deleted_at = $2, updated_at = $2
             WHERE id = $1 AND deleted_at IS NULL",
            &[&id, &ms(now)],
        )
        .await
        .map_err(backend)?;
    super::scheduled::cancel_computation(&tx, id).await?;
    tx.execute(
        "DELETE FROM computed_values WHERE computation_id = $1",
        &[&id],
    )
    .await
    .map_err(backend)?;
    tx.execute("DELETE FROM profile_jobs WHERE computation_id = $1", &[&id])
        .await
        .map_err(backend)?;
    tx.commit().await.map_err(backend)?;
    Ok(n > 0)
}

pub(super) async fn list_values(
    c: &impl GenericClient,
    computation_id: &str,
    after: &str,
    limit: u32,
) -> Result<Vec<ComputedValue>> {
    let rows = c
        .query(
            "SELECT computation_id, profile_id, value FROM computed_values
             WHERE computation_id = $1 AND profile_id > $2 ORDER BY profile_id LIMIT $3",
            &[&computation_id, &after, &sql_limit(limit)],
        )
        .await
        .map_err(backend)?;
    rows.iter().map(value).collect()
}

pub(super) async fn count_values(c: &impl GenericClient, computation_id: &str) -> Result<u64> {
    let row = c
        .query_one(
            "SELECT count(*) FROM computed_values WHERE computation_id = $1",
            &[&computation_id],
        )
        .await
        .map_err(backend)?;
    unsigned(&row, 0)
}

pub(super) fn value(row: &Row) -> Result<ComputedValue> {
    Ok(ComputedValue {
        computation_id: get(row, 0)?,
        profile_id: get(row, 1)?,
        value: get(row, 2)?,
    })
}

pub(super) async fn sends(
    c: &impl GenericClient,
    computation_id: &str,
) -> Result<Vec<(String, u64)>> {
    let rows = c
        .query(
            "SELECT destination_id, sent FROM computation_sends WHERE computation_id = $1
             ORDER BY destination_id",
            &[&computation_id],
        )
        .await
        .map_err(backend)?;
    rows.iter()
        .map(|r| Ok((get(r, 0)?, unsigned(r, 1)?)))
        .collect()
}
