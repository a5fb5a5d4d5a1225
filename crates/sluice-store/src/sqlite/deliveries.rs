//! Deliveries as the admin API sees them: listing, attempts, replay.

use chrono::{DateTime, Utc};
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, Row, params, params_from_iter};

use super::rows::{ms, opt_time, small, sql_limit, time};
use crate::{Attempt, DeliveryFilter, DeliveryRecord, DeliveryState, Result};

const RECORD_COLUMNS: &str = "d.id, d.destination_id, d.source_id, d.event_seq, e.message_id,
    d.state, d.attempts, d.next_attempt_at, d.first_attempt_at, d.last_error, d.updated_at";

fn record_row(row: &Row<'_>) -> rusqlite::Result<DeliveryRecord> {
    let state: String = row.get(5)?;
    Ok(DeliveryRecord {
        id: row.get(0)?,
        destination_id: row.get(1)?,
        source_id: row.get(2)?,
        event_seq: row.get(3)?,
        message_id: row.get(4)?,
        state: DeliveryState::parse(&state).ok_or_else(|| {
            rusqlite::Error::FromSqlConversionFailure(
                5,
                rusqlite::types::Type::Text,
                format!("unknown delivery state {state:?}").into(),
            )
        })?,
        attempts: small(row, 6)?,
        next_attempt_at: opt_time(row, 7)?,
        first_attempt_at: opt_time(row, 8)?,
        last_error: row.get(9)?,
        updated_at: time(row, 10)?,
    })
}

/// The `WHERE` clause and parameters selecting `filter`'s deliveries in
/// `state` (when given), with the cursor. The state is inlined as a literal
/// (it is one of four fixed words) so SQLite can use the partial indexes.
fn where_clause(filter: &DeliveryFilter, state: Option<DeliveryState>) -> (String, Vec<Value>) {
    let mut clauses = Vec::new();
    let mut values = Vec::new();
    if let Some(state) = state {
        clauses.push(format!("d.state = '{}'", state.as_str()));
    }
    if let Some(dest) = &filter.destination_id {
        values.push(Value::Text(dest.clone()));
        // With a messageId, or a state that has its own partial index, those
        // select few rows; the unary `+` keeps SQLite from walking the
        // destination's whole (destination_id, id) index instead, which is a
        // scan of every delivery when few or none match (the dashboard's
        // delivery-log filters).
        let selective = filter.message_id.is_some()
            || matches!(
                state,
                Some(
                    DeliveryState::Dead
                        | DeliveryState::Pending
                        | DeliveryState::Filtered
                        | DeliveryState::Discarded
                )
            );
        let plus = if selective { "+" } else { "" };
        clauses.push(format!("{plus}d.destination_id = ?{}", values.len()));
    }
    if let Some(message_id) = &filter.message_id {
        values.push(Value::Text(message_id.clone()));
        clauses.push(format!(
            "d.event_seq IN (SELECT seq FROM events WHERE message_id = ?{})",
            values.len()
        ));
    }
    if let Some(before) = filter.before_id {
        values.push(Value::Integer(before));
        clauses.push(format!("d.id < ?{}", values.len()));
    }
    let sql = if clauses.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", clauses.join(" AND "))
    };
    (sql, values)
}

/// Newest first; `filter.limit == 0` means no limit.
pub(super) fn list_deliveries(
    conn: &Connection,
    filter: &DeliveryFilter,
) -> Result<Vec<DeliveryRecord>> {
    let (clause, mut values) = where_clause(filter, filter.state);
    values.push(Value::Integer(sql_limit(filter.limit)));
    let sql = format!(
        "SELECT {RECORD_COLUMNS} FROM deliveries d JOIN events e ON e.seq = d.event_seq
         {clause} ORDER BY d.id DESC LIMIT ?{}",
        values.len()
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(params_from_iter(values), record_row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

pub(super) fn get_delivery(conn: &Connection, id: i64) -> Result<Option<DeliveryRecord>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {RECORD_COLUMNS} FROM deliveries d JOIN events e ON e.seq = d.event_seq
         WHERE d.id = ?1"
    ))?;
    Ok(stmt.query_row([id], record_row).optional()?)
}

pub(super) fn list_attempts(conn: &Connection, delivery_id: i64) -> Result<Vec<Attempt>> {
    let mut stmt = conn.prepare_cached(
        "SELECT delivery_id, attempt, at, url, status, error, latency_ms, response
         FROM attempts WHERE delivery_id = ?1 ORDER BY id",
    )?;
    let rows = stmt.query_map([delivery_id], |row| {
        Ok(Attempt {
            delivery_id: row.get(0)?,
            attempt: small(row, 1)?,
            at: time(row, 2)?,
            url: row.get(3)?,
            status: row.get(4)?,
            error: row.get(5)?,
            latency_ms: super::rows::count(row, 6)?,
            response: row.get(7)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// Dead deliveries matching `filter` (newest first, up to `filter.limit`,
/// `0` meaning all) become pending and due at `now`. Attempts are kept as
/// history; `first_attempt_at` is cleared so the retry window starts afresh.
pub(super) fn replay(
    conn: &Connection,
    filter: &DeliveryFilter,
    now: DateTime<Utc>,
) -> Result<u64> {
    let (clause, mut values) = where_clause(filter, Some(DeliveryState::Dead));
    values.push(Value::Integer(sql_limit(filter.limit)));
    let limit_param = values.len();
    values.push(Value::Integer(ms(now)));
    let now_param = values.len();
    let sql = format!(
        "UPDATE deliveries SET state = 'pending', next_attempt_at = ?{now_param},
                lease_until = NULL, first_attempt_at = NULL, updated_at = ?{now_param}
         WHERE id IN (SELECT d.id FROM deliveries d {clause} ORDER BY d.id DESC LIMIT ?{limit_param})"
    );
    let moved = conn
        .prepare_cached(&sql)?
        .execute(params_from_iter(values))?;
    Ok(moved as u64)
}

/// Deletes up to `chunk` events received before `before` that have no
/// pending delivery, with their deliveries and attempts. Returns how many
/// events were deleted; fewer than `chunk` means nothing is left to prune.
///
/// The newest event and the event of the newest delivery are always kept:
/// seqs and delivery ids are rowids (max + 1), so keeping the maximum rows
/// is what guarantees they are never handed out twice.
pub(super) fn prune_chunk(conn: &Connection, before: DateTime<Utc>, chunk: u32) -> Result<u64> {
    let seqs = conn
        .prepare_cached(
            "SELECT e.seq FROM events e WHERE e.received_at < ?1
               AND e.seq < (SELECT max(seq) FROM events)
               AND e.seq IS NOT (SELECT event_seq FROM deliveries ORDER BY id DESC LIMIT 1)
               AND NOT EXISTS (SELECT 1 FROM deliveries d
                               WHERE d.event_seq = e.seq AND d.state = 'pending')
             LIMIT ?2",
        )?
        .query_map(params![ms(before), i64::from(chunk)], |r| {
            r.get::<_, i64>(0)
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut attempts = conn.prepare_cached(
        "DELETE FROM attempts WHERE delivery_id IN (SELECT id FROM deliveries WHERE event_seq = ?1)",
    )?;
    let mut deliveries = conn.prepare_cached("DELETE FROM deliveries WHERE event_seq = ?1")?;
    let mut events = conn.prepare_cached("DELETE FROM events WHERE seq = ?1")?;
    for seq in &seqs {
        attempts.execute([seq])?;
        deliveries.execute([seq])?;
        events.execute([seq])?;
    }
    Ok(seqs.len() as u64)
}
