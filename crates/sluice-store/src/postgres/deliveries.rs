//! Deliveries as the admin API sees them: listing, attempts, replay, and
//! retention.

use chrono::{DateTime, Utc};
use deadpool_postgres::Client;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::rows::{backend, get, ms, opt_time, sql_limit, time, unsigned};
use crate::{Attempt, DeliveryFilter, DeliveryRecord, DeliveryState, Result, StoreError};

const RECORD_COLUMNS: &str = "d.id, d.destination_id, d.source_id, d.event_seq, e.message_id,
    d.state, d.attempts, d.next_attempt_at, d.first_attempt_at, d.last_error, d.updated_at";

fn record_row(row: &Row) -> Result<DeliveryRecord> {
    let state: String = get(row, 5)?;
    Ok(DeliveryRecord {
        id: get(row, 0)?,
        destination_id: get(row, 1)?,
        source_id: get(row, 2)?,
        event_seq: get(row, 3)?,
        message_id: get(row, 4)?,
        state: DeliveryState::parse(&state)
            .ok_or_else(|| StoreError::corrupt(format!("unknown delivery state {state:?}")))?,
        attempts: unsigned(row, 6)?,
        next_attempt_at: opt_time(row, 7)?,
        first_attempt_at: opt_time(row, 8)?,
        last_error: get(row, 9)?,
        updated_at: time(row, 10)?,
    })
}

type Params<'a> = Vec<&'a (dyn ToSql + Sync)>;

/// The `WHERE` clause and parameters selecting `filter`'s deliveries in
/// `state` (when given), with the cursor. The state is inlined as a literal
/// (one of four fixed words) so the planner can use the partial indexes.
fn where_clause<'a>(
    filter: &'a DeliveryFilter,
    state: Option<DeliveryState>,
) -> (String, Params<'a>) {
    let mut clauses = Vec::new();
    let mut values: Params<'a> = Vec::new();
    if let Some(state) = state {
        clauses.push(format!("d.state = '{}'", state.as_str()));
    }
    if let Some(dest) = &filter.destination_id {
        values.push(dest);
        clauses.push(format!("d.destination_id = ${}", values.len()));
    }
    if let Some(message_id) = &filter.message_id {
        values.push(message_id);
        clauses.push(format!(
            "d.event_seq IN (SELECT seq FROM events WHERE message_id = ${})",
            values.len()
        ));
    }
    if let Some(before) = &filter.before_id {
        values.push(before);
        clauses.push(format!("d.id < ${}", values.len()));
    }
    let sql = if clauses.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", clauses.join(" AND "))
    };
    (sql, values)
}

/// Newest first; `filter.limit == 0` means no limit.
pub(super) async fn list_deliveries(
    client: &Client,
    filter: &DeliveryFilter,
) -> Result<Vec<DeliveryRecord>> {
    let (clause, mut values) = where_clause(filter, filter.state);
    let limit = sql_limit(filter.limit);
    values.push(&limit);
    let sql = format!(
        "SELECT {RECORD_COLUMNS} FROM deliveries d JOIN events e ON e.seq = d.event_seq
         {clause} ORDER BY d.id DESC LIMIT ${}",
        values.len()
    );
    let stmt = client.prepare_cached(&sql).await.map_err(backend)?;
    let rows = client.query(&stmt, &values).await.map_err(backend)?;
    rows.iter().map(record_row).collect()
}

pub(super) async fn get_delivery(client: &Client, id: i64) -> Result<Option<DeliveryRecord>> {
    let stmt = client
        .prepare_cached(&format!(
            "SELECT {RECORD_COLUMNS} FROM deliveries d JOIN events e ON e.seq = d.event_seq
             WHERE d.id = $1"
        ))
        .await
        .map_err(backend)?;
    let row = client.query_opt(&stmt, &[&id]).await.map_err(backend)?;
    row.as_ref().map(record_row).transpose()
}

pub(super) async fn list_attempts(client: &Client, delivery_id: i64) -> Result<Vec<Attempt>> {
    let stmt = client
        .prepare_cached(
            "SELECT delivery_id, attempt, at, url, status, error, latency_ms, response
             FROM attempts WHERE delivery_id = $1 ORDER BY id",
        )
        .await
        .map_err(backend)?;
    let rows = client
        .query(&stmt, &[&delivery_id])
        .await
        .map_err(backend)?;
    rows.iter()
        .map(|row| {
            let status: Option<i32> = get(row, 4)?;
            Ok(Attempt {
                delivery_id: get(row, 0)?,
                attempt: unsigned(row, 1)?,
                at: time(row, 2)?,
                url: get(row, 3)?,
                status: status
                    .map(u16::try_from)
                    .transpose()
                    .map_err(|e| StoreError::corrupt(format!("attempt status: {e}")))?,
                error: get(row, 5)?,
                latency_ms: unsigned(row, 6)?,
                response: get(row, 7)?,
            })
        })
        .collect()
}

/// Dead deliveries matching `filter` (newest first, up to `filter.limit`,
/// `0` meaning all) become pending and due at `now`. Attempts are kept as
/// history; `first_attempt_at` is cleared so the retry window starts afresh
/// at the next attempt. A delivery never attempted (held back by an open
/// breaker, or dead-lettered by the pending cap) has no attempt to start it
/// and would be measured from its event's arrival again, dead at once: its
/// `first_attempt_at` becomes the replay time, where its fresh window starts.
/// One statement: the rows are locked as they are chosen, so two nodes
/// replaying at once move each delivery once.
pub(super) async fn replay(
    client: &Client,
    filter: &DeliveryFilter,
    now: DateTime<Utc>,
) -> Result<u64> {
    let (clause, mut values) = where_clause(filter, Some(DeliveryState::Dead));
    let limit = sql_limit(filter.limit);
    values.push(&limit);
    let limit_param = values.len();
    let now_ms = ms(now);
    values.push(&now_ms);
    let now_param = values.len();
    let sql = format!(
        "WITH chosen AS MATERIALIZED (
             SELECT d.id FROM deliveries d {clause}
             ORDER BY d.id DESC LIMIT ${limit_param} FOR UPDATE
         )
         UPDATE deliveries SET state = 'pending', next_attempt_at = ${now_param},
                lease_until = NULL,
                first_attempt_at = CASE WHEN attempts = 0 THEN ${now_param}::bigint END,
                updated_at = ${now_param}
         FROM chosen WHERE deliveries.id = chosen.id AND deliveries.state = 'dead'"
    );
    let stmt = client.prepare_cached(&sql).await.map_err(backend)?;
    client.execute(&stmt, &values).await.map_err(backend)
}

/// What one retention transaction did.
pub(super) struct Pruned {
    /// Events chosen; fewer than the chunk means nothing is left to prune.
    pub taken: usize,
    /// Events deleted (a chosen event is kept if a delivery of it was
    /// replayed meanwhile).
    pub deleted: u64,
}

/// Deletes up to `chunk` events received before `before` that have no
/// pending delivery, with their deliveries and attempts, in one transaction.
/// Safe beside other nodes: candidates are locked `SKIP LOCKED` (two pruners
/// split the work), and every delete re-checks `state <> 'pending'`, so a
/// delivery replayed meanwhile is kept, and with it its event.
pub(super) async fn prune_chunk(
    client: &mut Client,
    before: DateTime<Utc>,
    chunk: u32,
) -> Result<Pruned> {
    let tx = client.transaction().await.map_err(backend)?;
    let rows = tx
        .query(
            "SELECT e.seq FROM events e WHERE e.received_at < $1
               AND NOT EXISTS (SELECT 1 FROM deliveries d
                               WHERE d.event_seq = e.seq AND d.state = 'pending')
             ORDER BY e.seq LIMIT $2 FOR UPDATE SKIP LOCKED",
            &[&ms(before), &i64::from(chunk)],
        )
        .await
        .map_err(backend)?;
    let seqs = rows
        .iter()
        .map(|r| get::<i64>(r, 0))
        .collect::<Result<Vec<_>>>()?;
    if seqs.is_empty() {
        tx.commit().await.map_err(backend)?;
        return Ok(Pruned {
            taken: 0,
            deleted: 0,
        });
    }
    let gone = tx
        .query(
            "DELETE FROM deliveries WHERE event_seq = ANY($1) AND state <> 'pending' RETURNING id",
            &[&seqs],
        )
        .await
        .map_err(backend)?;
    let delivery_ids = gone
        .iter()
        .map(|r| get::<i64>(r, 0))
        .collect::<Result<Vec<_>>>()?;
    // A separate statement (a fresh snapshot): it also sees attempts that a
    // report committed while the delete above waited for its row lock.
    tx.execute(
        "DELETE FROM attempts WHERE delivery_id = ANY($1)",
        &[&delivery_ids],
    )
    .await
    .map_err(backend)?;
    let deleted = tx
        .execute(
            "DELETE FROM events e WHERE e.seq = ANY($1)
               AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_seq = e.seq)",
            &[&seqs],
        )
        .await
        .map_err(backend)?;
    tx.commit().await.map_err(backend)?;
    Ok(Pruned {
        taken: seqs.len(),
        deleted,
    })
}
