//! The delivery workers' side: leasing due work and recording attempts.

use std::time::Duration;

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};

use super::bodies;
use super::rows::{ms, opt_time, small, time};
use crate::records::last_error;
use crate::settled;
use crate::{Attempt, AttemptReport, DueDelivery, Outcome, Result};

/// Leases up to `limit` due deliveries, oldest due first. Walks the partial
/// `deliveries_due` index in order, so the cost is the rows returned plus the
/// still-leased ones skipped.
pub(super) fn claim_due(
    conn: &Connection,
    now: DateTime<Utc>,
    limit: u32,
    lease: Duration,
) -> Result<Vec<DueDelivery>> {
    let now_ms = ms(now);
    let lease_ms = i64::try_from(lease.as_millis()).unwrap_or(i64::MAX);
    let lease_until = now_ms.saturating_add(lease_ms);
    let mut select = conn.prepare_cached(
        "SELECT d.id, d.destination_id, d.event_seq, e.message_id, COALESCE(d.body, e.body), d.attempts,
                d.first_attempt_at, e.received_at
         FROM deliveries d JOIN events e ON e.seq = d.event_seq
         WHERE d.state = 'pending' AND d.next_attempt_at <= ?1
           AND (d.lease_until IS NULL OR d.lease_until <= ?1)
         ORDER BY d.next_attempt_at, d.id
         LIMIT ?2",
    )?;
    let due = select
        .query_map(params![now_ms, i64::from(limit)], |row| {
            Ok(DueDelivery {
                delivery_id: row.get(0)?,
                destination_id: row.get(1)?,
                event_seq: row.get(2)?,
                message_id: row.get(3)?,
                event_body: bodies::read(row, 4)?,
                attempts: small(row, 5)?,
                first_attempt_at: opt_time(row, 6)?,
                received_at: time(row, 7)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut lease_stmt =
        conn.prepare_cached("UPDATE deliveries SET lease_until = ?2 WHERE id = ?1")?;
    for d in &due {
        lease_stmt.execute(params![d.delivery_id, lease_until])?;
    }
    Ok(due)
}

/// When the earliest pending delivery may be claimed: its `next_attempt_at`,
/// or its lease end when that is later. Rows come in `next_attempt_at` order,
/// so the scan stops at the first row that cannot beat the best so far.
pub(super) fn next_due(conn: &Connection) -> Result<Option<DateTime<Utc>>> {
    let mut stmt = conn.prepare_cached(
        "SELECT next_attempt_at, lease_until FROM deliveries
         WHERE state = 'pending' AND next_attempt_at IS NOT NULL
         ORDER BY next_attempt_at, id",
    )?;
    let mut rows = stmt.query([])?;
    let mut best: Option<i64> = None;
    while let Some(row) = rows.next()? {
        let next: i64 = row.get(0)?;
        if best.is_some_and(|b| next >= b) {
            break;
        }
        let lease: Option<i64> = row.get(1)?;
        let ready = lease.map_or(next, |l| l.max(next));
        best = Some(best.map_or(ready, |b| b.min(ready)));
    }
    Ok(best.and_then(DateTime::from_timestamp_millis))
}

/// Records each report: its attempts, one more attempt round (none for a
/// report without attempts, which only releases the lease), and the
/// outcome, in one `UPDATE` per delivery. The attempts go into the
/// delivery's row when they are its first round and settle it
/// (`crate::settled`), else into `attempts`. A report for a delivery that
/// is no longer pending (discarded while in flight) keeps its attempts but
/// does not change the state; a report for an unknown (pruned) delivery is
/// ignored. The `SET` expressions all read the row as it was, so the state
/// test sees the state before this report; `RETURNING` reads it as written.
pub(super) fn report(conn: &Connection, reports: &[AttemptReport]) -> Result<()> {
    let mut update = conn.prepare_cached(
        "UPDATE deliveries SET attempts = attempts + ?3, lease_until = NULL,
         first_attempt_at = CASE WHEN ?3 = 1 THEN COALESCE(first_attempt_at, ?2)
                                 ELSE first_attempt_at END,
         updated_at = ?2,
         state = CASE WHEN state = 'pending' THEN ?4 ELSE state END,
         next_attempt_at = CASE WHEN state = 'pending' THEN ?5 ELSE next_attempt_at END,
         last_error = CASE WHEN state = 'pending' THEN COALESCE(?6, last_error)
                           ELSE last_error END,
         settled_attempts = CASE WHEN state = 'pending' AND attempts = 0 THEN ?7
                                 ELSE settled_attempts END
         WHERE id = ?1
         RETURNING ?7 IS NOT NULL AND attempts = ?3 AND settled_attempts IS NOT NULL",
    )?;
    for r in reports {
        let (state, next_attempt_at, error) = match &r.outcome {
            Outcome::Succeeded => ("succeeded", None, None),
            Outcome::Retry { at } => ("pending", Some(ms(*at)), last_error(&r.attempts)),
            Outcome::Dead { error } => ("dead", None, Some(error.clone())),
            Outcome::Discarded { reason } => ("discarded", None, Some(reason.clone())),
        };
        let kept: Option<bool> = update
            .query_row(
                params![
                    r.delivery_id,
                    ms(r.at),
                    i64::from(!r.attempts.is_empty()),
                    state,
                    next_attempt_at,
                    error,
                    settled::settled_log(r)
                ],
                |row| row.get(0),
            )
            .optional()?;
        if kept == Some(false) {
            insert_attempts(conn, r.delivery_id, &r.attempts)?;
        }
    }
    Ok(())
}

/// Appends `attempts` after the delivery's last (`n` counts them from 1;
/// see schema version 13).
fn insert_attempts(conn: &Connection, delivery_id: i64, attempts: &[Attempt]) -> Result<()> {
    if attempts.is_empty() {
        return Ok(());
    }
    let last: i64 = conn
        .prepare_cached("SELECT COALESCE(max(n), 0) FROM attempts WHERE delivery_id = ?1")?
        .query_row([delivery_id], |r| r.get(0))?;
    let mut insert = conn.prepare_cached(
        "INSERT INTO attempts
             (delivery_id, n, attempt, at, url, status, error, latency_ms, response)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    )?;
    for (n, a) in (last + 1..).zip(attempts) {
        insert.execute(params![
            delivery_id,
            n,
            a.attempt,
            ms(a.at),
            a.url,
            a.status,
            a.error,
            i64::try_from(a.latency_ms).unwrap_or(i64::MAX),
            a.response
        ])?;
    }
    Ok(())
}
