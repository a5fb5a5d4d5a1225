//! Deliveries as the admin API sees them (listing, attempts, replay),
//! retention (`prune`) and the pending cap (`cap`).
//!
//! The claims and reports of the delivery workers, and the writes of
//! ingest, stay in the backends: they are the hot path, and written for
//! each engine.

mod cap;
mod prune;

use chrono::{DateTime, Utc};

pub(crate) use cap::{dead_letter_over_cap, over_cap};
pub(crate) use prune::{Spare, prune_chunk};

use crate::settled;
use crate::sql::{Db, Dialect, Param, Row, args, limit};
use crate::{Attempt, DeliveryFilter, DeliveryRecord, DeliveryState, Result, StoreError};

/// `d.source_id` is `''` when it is the event's own source (every delivery
/// SQLite's ingest writes since its schema version 12; PostgreSQL's always
/// names it); only the privacy job's notices, whose event belongs to the
/// privacy source, name another.
const RECORD_COLUMNS: &str =
    "d.id, d.destination_id, COALESCE(NULLIF(d.source_id, ''), e.source_id),
    d.event_seq, e.message_id, d.state, d.attempts, d.next_attempt_at, d.first_attempt_at,
    d.last_error, d.updated_at";

fn record(mut row: Row) -> Result<DeliveryRecord> {
    let state: String = row.take(5)?;
    Ok(DeliveryRecord {
        id: row.get(0)?,
        destination_id: row.take(1)?,
        source_id: row.take(2)?,
        event_seq: row.get(3)?,
        message_id: row.take(4)?,
        state: DeliveryState::parse(&state)
            .ok_or_else(|| StoreError::corrupt(format!("unknown delivery state {state:?}")))?,
        attempts: row.get(6)?,
        next_attempt_at: row.get(7)?,
        first_attempt_at: row.get(8)?,
        last_error: row.take(9)?,
        updated_at: row.get(10)?,
    })
}

/// The `WHERE` clause and parameters selecting `filter`'s deliveries in
/// `state` (when given), with the cursor. The state is inlined as a literal
/// (one of four fixed words) so the planner can use the partial indexes.
///
/// `seqs` are the events `filter.message_id` names when the backend found
/// them itself: SQLite has no index on `events.message_id` and reads its
/// per-block filters (`sqlite::message_ids`). `None` looks them up here.
fn where_clause<'a>(
    dialect: Dialect,
    filter: &'a DeliveryFilter,
    state: Option<DeliveryState>,
    seqs: Option<&'a [i64]>,
) -> (String, Vec<Param<'a>>) {
    let mut clauses = Vec::new();
    let mut values = Vec::new();
    if let Some(state) = state {
        clauses.push(format!("d.state = '{}'", state.as_str()));
    }
    if let Some(dest) = &filter.destination_id {
        values.push(Param::from(dest));
        // With a messageId, or a state that has its own partial index, those
        // select few rows; SQLite must not walk the destination's whole
        // (destination_id, id) index instead, which is a scan of every
        // delivery when few or none match (the dashboard's delivery-log
        // filters).
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
        let hint = if selective { dialect.no_index() } else { "" };
        clauses.push(format!("{hint}d.destination_id = ${}", values.len()));
    }
    if let Some(message_id) = &filter.message_id {
        let events = match seqs {
            Some(seqs) => {
                values.push(Param::from(seqs));
                format!("SELECT value FROM {}", dialect.int_list(values.len()))
            }
            None => {
                values.push(Param::from(message_id));
                format!(
                    "SELECT seq FROM events WHERE message_id = ${}",
                    values.len()
                )
            }
        };
        clauses.push(format!("d.event_seq IN ({events})"));
    }
    if let Some(before) = filter.before_id {
        values.push(Param::from(before));
        clauses.push(format!("d.id < ${}", values.len()));
    }
    let sql = if clauses.is_empty() {
        String::new()
    } else {
        format!("WHERE {}", clauses.join(" AND "))
    };
    (sql, values)
}

/// Newest first; `filter.limit == 0` means no limit. `seqs`: see
/// [`where_clause`].
pub(crate) async fn list_deliveries(
    db: &impl Db,
    filter: &DeliveryFilter,
    seqs: Option<&[i64]>,
) -> Result<Vec<DeliveryRecord>> {
    let (clause, mut values) = where_clause(db.dialect(), filter, filter.state, seqs);
    values.push(limit(filter.limit));
    let sql = format!(
        "SELECT {RECORD_COLUMNS} FROM deliveries d JOIN events e ON e.seq = d.event_seq
         {clause} ORDER BY d.id DESC LIMIT ${}",
        values.len()
    );
    db.query_map(&sql, &values, record).await
}

pub(crate) async fn get_delivery(db: &impl Db, id: i64) -> Result<Option<DeliveryRecord>> {
    let sql = format!(
        "SELECT {RECORD_COLUMNS} FROM deliveries d JOIN events e ON e.seq = d.event_seq
         WHERE d.id = $1"
    );
    db.query_opt(&sql, args![id]).await?.map(record).transpose()
}

/// The column that orders a delivery's attempts as they were written:
/// SQLite keys them by `(delivery_id, n)` (its schema version 13),
/// PostgreSQL by a serial `id`.
fn attempt_order(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Sqlite => "n",
        Dialect::Postgres => "id",
    }
}

/// The delivery's attempts in the order written: the round its row keeps,
/// if any (`crate::settled`), then its rows in `attempts`.
pub(crate) async fn list_attempts(db: &impl Db, delivery_id: i64) -> Result<Vec<Attempt>> {
    let kept: Option<String> = match db
        .query_opt(
            "SELECT settled_attempts FROM deliveries WHERE id = $1",
            args![delivery_id],
        )
        .await?
    {
        Some(mut row) => row.take(0)?,
        None => None,
    };
    let mut attempts = match kept {
        Some(text) => settled::decode(delivery_id, &text)?,
        None => Vec::new(),
    };
    let sql = format!(
        "SELECT delivery_id, attempt, at, url, status, error, latency_ms, response
         FROM attempts WHERE delivery_id = $1 ORDER BY {}",
        attempt_order(db.dialect())
    );
    let logged = db
        .query_map(&sql, args![delivery_id], |mut row| {
            Ok(Attempt {
                delivery_id: row.get(0)?,
                attempt: row.get(1)?,
                at: row.get(2)?,
                url: row.take(3)?,
                status: row.get(4)?,
                error: row.take(5)?,
                latency_ms: row.get(6)?,
                response: row.take(7)?,
            })
        })
        .await?;
    attempts.extend(logged);
    Ok(attempts)
}

/// Dead deliveries matching `filter` (newest first, up to `filter.limit`,
/// `0` meaning all) become pending and due at `now`. Attempts are kept as
/// history; `first_attempt_at` is cleared so the retry window starts afresh
/// at the next attempt. A delivery never attempted (held back by an open
/// breaker, or dead-lettered by the pending cap) has no attempt to start it
/// and would be measured from its event's arrival again, dead at once: its
/// `first_attempt_at` becomes the replay time, where its fresh window starts.
/// One statement: on PostgreSQL the rows are locked as they are chosen, so
/// two nodes replaying at once move each delivery once. `seqs`: see
/// [`where_clause`].
pub(crate) async fn replay(
    db: &impl Db,
    filter: &DeliveryFilter,
    seqs: Option<&[i64]>,
    now: DateTime<Utc>,
) -> Result<u64> {
    let dialect = db.dialect();
    let (clause, mut values) = where_clause(dialect, filter, Some(DeliveryState::Dead), seqs);
    values.push(limit(filter.limit));
    let limit_param = values.len();
    values.push(Param::from(now));
    let now_param = values.len();
    let sql = format!(
        "WITH chosen AS MATERIALIZED (
             SELECT d.id FROM deliveries d {clause}
             ORDER BY d.id DESC LIMIT ${limit_param}{lock}
         )
         UPDATE deliveries SET state = 'pending', next_attempt_at = ${now_param},
                lease_until = NULL,
                first_attempt_at = CASE WHEN attempts = 0 THEN CAST(${now_param} AS BIGINT) END,
                updated_at = ${now_param}
         WHERE id IN (SELECT id FROM chosen) AND state = 'dead'",
        lock = dialect.for_update(),
    );
    db.execute(&sql, &values).await
}
