//! Destinations and their connections to sources.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use deadpool_postgres::{Client, GenericClient, Transaction};
use tokio_postgres::Row;

use super::rows::{backend, conflict_or_backend, get, json_error, ms, time};
use crate::records::normalized;
use crate::{Destination, DestinationPatch, NewDestination, Result, StoreError, WebhookSettings};

const DESTINATION_COLUMNS: &str = "id, name, kind, enabled, settings, created_at, updated_at";

fn destination_row(row: &Row, source_ids: Vec<String>) -> Result<Destination> {
    let settings: String = get(row, 4)?;
    let settings: WebhookSettings = serde_json::from_str(&settings).map_err(json_error)?;
    Ok(Destination {
        id: get(row, 0)?,
        name: get(row, 1)?,
        kind: get(row, 2)?,
        enabled: get(row, 3)?,
        settings,
        source_ids,
        created_at: time(row, 5)?,
        updated_at: time(row, 6)?,
    })
}

/// Fails with `NotFound` unless every id names an existing source. The rows
/// are share-locked until commit, so another node cannot delete a source
/// while this transaction connects a destination to it.
async fn require_sources(tx: &Transaction<'_>, source_ids: &[String]) -> Result<()> {
    let stmt = tx
        .prepare_cached("SELECT id FROM sources WHERE id = ANY($1) FOR SHARE")
        .await
        .map_err(backend)?;
    let rows = tx.query(&stmt, &[&source_ids]).await.map_err(backend)?;
    let found = rows
        .iter()
        .map(|r| get::<String>(r, 0))
        .collect::<Result<Vec<_>>>()?;
    match source_ids.iter().find(|id| !found.contains(id)) {
        Some(missing) => Err(StoreError::NotFound(format!("source {missing}"))),
        None => Ok(()),
    }
}

async fn connect(tx: &Transaction<'_>, destination_id: &str, source_ids: &[String]) -> Result<()> {
    tx.execute(
        "DELETE FROM destination_sources WHERE destination_id = $1",
        &[&destination_id],
    )
    .await
    .map_err(backend)?;
    let stmt = tx
        .prepare_cached(
            "INSERT INTO destination_sources (destination_id, source_id)
             SELECT $1, s FROM UNNEST($2::text[]) AS s",
        )
        .await
        .map_err(backend)?;
    tx.execute(&stmt, &[&destination_id, &source_ids])
        .await
        .map_err(backend)?;
    Ok(())
}

async fn source_ids_of(client: &impl GenericClient, destination_id: &str) -> Result<Vec<String>> {
    let stmt = client
        .prepare_cached(
            "SELECT source_id FROM destination_sources WHERE destination_id = $1 ORDER BY source_id",
        )
        .await
        .map_err(backend)?;
    let rows = client
        .query(&stmt, &[&destination_id])
        .await
        .map_err(backend)?;
    rows.iter().map(|r| get(r, 0)).collect()
}

pub(super) async fn create_destination(
    client: &mut Client,
    new: NewDestination,
    now: DateTime<Utc>,
) -> Result<Destination> {
    let source_ids = normalized(new.source_ids);
    let settings = serde_json::to_string(&new.settings).map_err(json_error)?;
    let tx = client.transaction().await.map_err(backend)?;
    require_sources(&tx, &source_ids).await?;
    let stmt = tx
        .prepare_cached(
            "INSERT INTO destinations (id, name, kind, enabled, settings, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $6)",
        )
        .await
        .map_err(backend)?;
    tx.execute(
        &stmt,
        &[
            &new.id,
            &new.name,
            &new.kind,
            &new.enabled,
            &settings,
            &ms(now),
        ],
    )
    .await
    .map_err(|e| conflict_or_backend(e, format!("destination {} exists", new.id)))?;
    connect(&tx, &new.id, &source_ids).await?;
    tx.commit().await.map_err(backend)?;
    Ok(Destination {
        id: new.id,
        name: new.name,
        kind: new.kind,
        enabled: new.enabled,
        settings: new.settings,
        source_ids,
        created_at: now,
        updated_at: now,
    })
}

/// Two statements in one repeatable-read transaction, so destinations and
/// their connections come from the same snapshot.
pub(super) async fn list_destinations(client: &mut Client) -> Result<Vec<Destination>> {
    let tx = client
        .build_transaction()
        .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await
        .map_err(backend)?;
    let mut links: HashMap<String, Vec<String>> = HashMap::new();
    let rows = tx
        .query(
            "SELECT destination_id, source_id FROM destination_sources
             ORDER BY destination_id, source_id",
            &[],
        )
        .await
        .map_err(backend)?;
    for row in &rows {
        links.entry(get(row, 0)?).or_default().push(get(row, 1)?);
    }
    let stmt = tx
        .prepare_cached(&format!(
            "SELECT {DESTINATION_COLUMNS} FROM destinations ORDER BY created_at, id"
        ))
        .await
        .map_err(backend)?;
    let rows = tx.query(&stmt, &[]).await.map_err(backend)?;
    let destinations = rows
        .iter()
        .map(|row| {
            let id: String = get(row, 0)?;
            destination_row(row, links.remove(&id).unwrap_or_default())
        })
        .collect();
    tx.commit().await.map_err(backend)?;
    destinations
}

async fn destination_by_id(
    client: &impl GenericClient,
    id: &str,
    lock: bool,
) -> Result<Option<Destination>> {
    let suffix = if lock { " FOR UPDATE" } else { "" };
    let stmt = client
        .prepare_cached(&format!(
            "SELECT {DESTINATION_COLUMNS} FROM destinations WHERE id = $1{suffix}"
        ))
        .await
        .map_err(backend)?;
    let Some(row) = client.query_opt(&stmt, &[&id]).await.map_err(backend)? else {
        return Ok(None);
    };
    let source_ids = source_ids_of(client, id).await?;
    destination_row(&row, source_ids).map(Some)
}

pub(super) async fn get_destination(client: &mut Client, id: &str) -> Result<Option<Destination>> {
    let tx = client
        .build_transaction()
        .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await
        .map_err(backend)?;
    let found = destination_by_id(&tx, id, false).await?;
    tx.commit().await.map_err(backend)?;
    Ok(found)
}

/// Read-modify-write under a row lock (see `sources::update_source`).
pub(super) async fn update_destination(
    client: &mut Client,
    id: &str,
    mut patch: DestinationPatch,
    now: DateTime<Utc>,
) -> Result<Option<Destination>> {
    let tx = client.transaction().await.map_err(backend)?;
    let Some(mut dest) = destination_by_id(&tx, id, true).await? else {
        return Ok(None);
    };
    if let Some(source_ids) = patch.source_ids.take() {
        let source_ids = normalized(source_ids);
        require_sources(&tx, &source_ids).await?;
        connect(&tx, id, &source_ids).await?;
        dest.source_ids = source_ids;
    }
    let was_enabled = dest.enabled;
    patch.apply_fields(&mut dest, now);
    if dest.enabled && !was_enabled {
        super::profiles::defs::resync_destination(&tx, id).await?;
    }
    let settings = serde_json::to_string(&dest.settings).map_err(json_error)?;
    let stmt = tx
        .prepare_cached(
            "UPDATE destinations SET name = $2, enabled = $3, settings = $4, updated_at = $5
             WHERE id = $1",
        )
        .await
        .map_err(backend)?;
    tx.execute(
        &stmt,
        &[&id, &dest.name, &dest.enabled, &settings, &ms(now)],
    )
    .await
    .map_err(backend)?;
    tx.commit().await.map_err(backend)?;
    Ok(Some(dest))
}

/// Deletes the destination and its connections, to sources and to computed
/// traits and audiences; its pending deliveries are discarded (finished
/// deliveries stay as history). One transaction.
pub(super) async fn delete_destination(
    client: &mut Client,
    id: &str,
    now: DateTime<Utc>,
) -> Result<bool> {
    let tx = client.transaction().await.map_err(backend)?;
    let deleted = tx
        .execute("DELETE FROM destinations WHERE id = $1", &[&id])
        .await
        .map_err(backend)?;
    tx.execute(
        "DELETE FROM destination_sources WHERE destination_id = $1",
        &[&id],
    )
    .await
    .map_err(backend)?;
    // Before the deliveries: the lock order of an engine step.
    super::profiles::defs::forget_destination(&tx, id).await?;
    tx.execute(
        "DELETE FROM destination_filters WHERE destination_id = $1",
        &[&id],
    )
    .await
    .map_err(backend)?;
    tx.execute(
        "UPDATE deliveries SET state = 'discarded', next_attempt_at = NULL, lease_until = NULL,
         last_error = 'destination deleted', updated_at = $2
         WHERE destination_id = $1 AND state = 'pending'",
        &[&id, &ms(now)],
    )
    .await
    .map_err(backend)?;
    tx.commit().await.map_err(backend)?;
    Ok(deleted > 0)
}
