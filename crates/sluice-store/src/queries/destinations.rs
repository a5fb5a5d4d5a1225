//! Destinations and their connections to sources.

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use super::computations;
use crate::records::normalized;
use crate::sql::{Conn, Db, Row, Tx, args, conflict};
use crate::{Destination, DestinationPatch, NewDestination, Result, StoreError, WebhookSettings};

const DESTINATION_COLUMNS: &str = "id, name, kind, enabled, settings, created_at, updated_at";

fn destination(mut row: Row, source_ids: Vec<String>) -> Result<Destination> {
    let settings: String = row.take(4)?;
    let settings: WebhookSettings = serde_json::from_str(&settings)?;
    Ok(Destination {
        id: row.take(0)?,
        name: row.take(1)?,
        kind: row.take(2)?,
        enabled: row.get(3)?,
        settings,
        source_ids,
        created_at: row.get(5)?,
        updated_at: row.get(6)?,
    })
}

/// Fails with `NotFound` unless every id names an existing source. On
/// PostgreSQL the rows are share-locked until commit, so another node
/// cannot delete a source while this transaction connects to it.
async fn require_sources(db: &impl Db, source_ids: &[String]) -> Result<()> {
    let d = db.dialect();
    let sql = format!(
        "SELECT id FROM sources WHERE id IN (SELECT value FROM {}){}",
        d.list(1),
        d.for_share()
    );
    let found = db
        .query_map(&sql, args![source_ids], |r| r.get::<String>(0))
        .await?;
    match source_ids.iter().find(|id| !found.contains(id)) {
        Some(missing) => Err(StoreError::NotFound(format!("source {missing}"))),
        None => Ok(()),
    }
}

async fn connect(db: &impl Db, destination_id: &str, source_ids: &[String]) -> Result<()> {
    db.execute(
        "DELETE FROM destination_sources WHERE destination_id = $1",
        args![destination_id],
    )
    .await?;
    let sql = format!(
        "INSERT INTO destination_sources (destination_id, source_id)
         SELECT $1, value FROM {}",
        db.dialect().list(2)
    );
    db.execute(&sql, args![destination_id, source_ids]).await?;
    Ok(())
}

async fn source_ids_of(db: &impl Db, destination_id: &str) -> Result<Vec<String>> {
    db.query_map(
        "SELECT source_id FROM destination_sources WHERE destination_id = $1 ORDER BY source_id",
        args![destination_id],
        |mut r| r.take(0),
    )
    .await
}

pub(crate) async fn create_destination(
    conn: &mut impl Conn,
    new: NewDestination,
    now: DateTime<Utc>,
) -> Result<Destination> {
    let source_ids = normalized(new.source_ids);
    let settings = serde_json::to_string(&new.settings)?;
    let tx = conn.begin().await?;
    require_sources(&tx, &source_ids).await?;
    tx.execute(
        "INSERT INTO destinations (id, name, kind, enabled, settings, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $6)",
        args![&new.id, &new.name, &new.kind, new.enabled, &settings, now],
    )
    .await
    .map_err(conflict(format!("destination {} exists", new.id)))?;
    connect(&tx, &new.id, &source_ids).await?;
    tx.commit().await?;
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

/// Two statements in one snapshot, so destinations and their connections
/// agree.
pub(crate) async fn list_destinations(conn: &mut impl Conn) -> Result<Vec<Destination>> {
    let tx = conn.snapshot().await?;
    let mut links: HashMap<String, Vec<String>> = HashMap::new();
    let rows = tx
        .query(
            "SELECT destination_id, source_id FROM destination_sources
             ORDER BY destination_id, source_id",
            args![],
        )
        .await?;
    for mut row in rows {
        links.entry(row.take(0)?).or_default().push(row.take(1)?);
    }
    let sql = format!("SELECT {DESTINATION_COLUMNS} FROM destinations ORDER BY created_at, id");
    let destinations = tx
        .query_map(&sql, args![], |row| {
            let id: String = row.get(0)?;
            destination(row, links.remove(&id).unwrap_or_default())
        })
        .await?;
    tx.commit().await?;
    Ok(destinations)
}

async fn destination_by_id(db: &impl Db, id: &str, lock: bool) -> Result<Option<Destination>> {
    let suffix = if lock { db.dialect().for_update() } else { "" };
    let sql = format!("SELECT {DESTINATION_COLUMNS} FROM destinations WHERE id = $1{suffix}");
    let Some(row) = db.query_opt(&sql, args![id]).await? else {
        return Ok(None);
    };
    let source_ids = source_ids_of(db, id).await?;
    destination(row, source_ids).map(Some)
}

pub(crate) async fn get_destination(conn: &mut impl Conn, id: &str) -> Result<Option<Destination>> {
    let tx = conn.snapshot().await?;
    let found = destination_by_id(&tx, id, false).await?;
    tx.commit().await?;
    Ok(found)
}

/// Read-modify-write under a row lock (see `sources::update_source`). A
/// destination switched back on gets a first sync of Personas values.
pub(crate) async fn update_destination(
    conn: &mut impl Conn,
    id: &str,
    mut patch: DestinationPatch,
    now: DateTime<Utc>,
) -> Result<Option<Destination>> {
    let tx = conn.begin().await?;
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
        computations::resync_destination(&tx, id).await?;
    }
    let settings = serde_json::to_string(&dest.settings)?;
    tx.execute(
        "UPDATE destinations SET name = $2, enabled = $3, settings = $4, updated_at = $5
         WHERE id = $1",
        args![id, &dest.name, dest.enabled, &settings, now],
    )
    .await?;
    tx.commit().await?;
    Ok(Some(dest))
}

/// Deletes the destination and its connections, to sources and to computed
/// traits and audiences; its pending deliveries are discarded (finished
/// deliveries stay as history). One transaction.
pub(crate) async fn delete_destination(
    conn: &mut impl Conn,
    id: &str,
    now: DateTime<Utc>,
) -> Result<bool> {
    let tx = conn.begin().await?;
    let deleted = tx
        .execute("DELETE FROM destinations WHERE id = $1", args![id])
        .await?;
    tx.execute(
        "DELETE FROM destination_sources WHERE destination_id = $1",
        args![id],
    )
    .await?;
    // Before the deliveries: the lock order of a profile engine step.
    computations::forget_destination(&tx, id).await?;
    tx.execute(
        "DELETE FROM destination_filters WHERE destination_id = $1",
        args![id],
    )
    .await?;
    tx.execute(
        "UPDATE deliveries SET state = 'discarded', next_attempt_at = NULL, lease_until = NULL,
         last_error = 'destination deleted', updated_at = $2
         WHERE destination_id = $1 AND state = 'pending'",
        args![id, now],
    )
    .await?;
    tx.commit().await?;
    Ok(deleted > 0)
}
