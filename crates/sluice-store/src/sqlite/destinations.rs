//! Destinations and their connections to sources.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::rows::{conflict_or_backend, ms, time};
use crate::records::normalized;
use crate::{Destination, DestinationPatch, NewDestination, Result, StoreError, WebhookSettings};

const DESTINATION_COLUMNS: &str = "id, name, kind, enabled, settings, created_at, updated_at";

/// A destination row before its settings JSON is parsed and sources attached.
struct DestinationRow {
    id: String,
    name: String,
    kind: String,
    enabled: bool,
    settings: String,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

impl DestinationRow {
    fn read(row: &Row<'_>) -> rusqlite::Result<DestinationRow> {
        Ok(DestinationRow {
            id: row.get(0)?,
            name: row.get(1)?,
            kind: row.get(2)?,
            enabled: row.get(3)?,
            settings: row.get(4)?,
            created_at: time(row, 5)?,
            updated_at: time(row, 6)?,
        })
    }

    fn into_destination(self, source_ids: Vec<String>) -> Result<Destination> {
        let settings: WebhookSettings = serde_json::from_str(&self.settings)?;
        Ok(Destination {
            id: self.id,
            name: self.name,
            kind: self.kind,
            enabled: self.enabled,
            settings,
            source_ids,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}

/// Fails with `NotFound` unless every id names an existing source.
fn require_sources(conn: &Connection, source_ids: &[String]) -> Result<()> {
    let mut stmt = conn.prepare_cached("SELECT 1 FROM sources WHERE id = ?1")?;
    for id in source_ids {
        if !stmt.exists([id])? {
            return Err(StoreError::NotFound(format!("source {id}")));
        }
    }
    Ok(())
}

fn connect(conn: &Connection, destination_id: &str, source_ids: &[String]) -> Result<()> {
    conn.prepare_cached("DELETE FROM destination_sources WHERE destination_id = ?1")?
        .execute([destination_id])?;
    let mut insert = conn.prepare_cached(
        "INSERT INTO destination_sources (destination_id, source_id) VALUES (?1, ?2)",
    )?;
    for source_id in source_ids {
        insert.execute([destination_id, source_id])?;
    }
    Ok(())
}

fn source_ids_of(conn: &Connection, destination_id: &str) -> Result<Vec<String>> {
    let mut stmt = conn.prepare_cached(
        "SELECT source_id FROM destination_sources WHERE destination_id = ?1 ORDER BY source_id",
    )?;
    let rows = stmt.query_map([destination_id], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

pub(super) fn create_destination(
    conn: &Connection,
    new: NewDestination,
    now: DateTime<Utc>,
) -> Result<Destination> {
    let source_ids = normalized(new.source_ids);
    require_sources(conn, &source_ids)?;
    conn.prepare_cached(
        "INSERT INTO destinations (id, name, kind, enabled, settings, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)",
    )?
    .execute(params![
        new.id,
        new.name,
        new.kind,
        new.enabled,
        serde_json::to_string(&new.settings)?,
        ms(now)
    ])
    .map_err(|e| conflict_or_backend(e, format!("destination {} exists", new.id)))?;
    connect(conn, &new.id, &source_ids)?;
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

pub(super) fn list_destinations(conn: &Connection) -> Result<Vec<Destination>> {
    let mut links: HashMap<String, Vec<String>> = HashMap::new();
    let mut stmt = conn.prepare_cached(
        "SELECT destination_id, source_id FROM destination_sources ORDER BY destination_id, source_id",
    )?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        links.entry(row.get(0)?).or_default().push(row.get(1)?);
    }
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {DESTINATION_COLUMNS} FROM destinations ORDER BY created_at, id"
    ))?;
    let rows = stmt.query_map([], DestinationRow::read)?;
    rows.map(|row| {
        let row = row?;
        let source_ids = links.remove(&row.id).unwrap_or_default();
        row.into_destination(source_ids)
    })
    .collect()
}

pub(super) fn get_destination(conn: &Connection, id: &str) -> Result<Option<Destination>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {DESTINATION_COLUMNS} FROM destinations WHERE id = ?1"
    ))?;
    let Some(row) = stmt.query_row([id], DestinationRow::read).optional()? else {
        return Ok(None);
    };
    let source_ids = source_ids_of(conn, id)?;
    row.into_destination(source_ids).map(Some)
}

pub(super) fn update_destination(
    conn: &Connection,
    id: &str,
    mut patch: DestinationPatch,
    now: DateTime<Utc>,
) -> Result<Option<Destination>> {
    let Some(mut dest) = get_destination(conn, id)? else {
        return Ok(None);
    };
    if let Some(source_ids) = patch.source_ids.take() {
        let source_ids = normalized(source_ids);
        require_sources(conn, &source_ids)?;
        connect(conn, id, &source_ids)?;
        dest.source_ids = source_ids;
    }
    let was_enabled = dest.enabled;
    patch.apply_fields(&mut dest, now);
    if dest.enabled && !was_enabled {
        super::profiles::defs::resync_destination(conn, id)?;
    }
    conn.prepare_cached(
        "UPDATE destinations SET name = ?2, enabled = ?3, settings = ?4, updated_at = ?5 WHERE id = ?1",
    )?
    .execute(params![
        id,
        dest.name,
        dest.enabled,
        serde_json::to_string(&dest.settings)?,
        ms(now)
    ])?;
    Ok(Some(dest))
}

/// Deletes the destination and its connections, to sources and to computed
/// traits and audiences; its pending deliveries are discarded (finished
/// deliveries stay as history).
pub(super) fn delete_destination(conn: &Connection, id: &str, now: DateTime<Utc>) -> Result<bool> {
    let deleted = conn
        .prepare_cached("DELETE FROM destinations WHERE id = ?1")?
        .execute([id])?;
    conn.prepare_cached("DELETE FROM destination_sources WHERE destination_id = ?1")?
        .execute([id])?;
    super::profiles::defs::forget_destination(conn, id)?;
    conn.prepare_cached("DELETE FROM destination_filters WHERE destination_id = ?1")?
        .execute([id])?;
    conn.prepare_cached(
        "UPDATE deliveries SET state = 'discarded', next_attempt_at = NULL, lease_until = NULL,
         last_error = 'destination deleted', updated_at = ?2
         WHERE destination_id = ?1 AND state = 'pending'",
    )?
    .execute(params![id, ms(now)])?;
    Ok(deleted > 0)
}
