//! Deliveries as the admin API sees them: listing, attempts, replay.

use chrono::{DateTime, Utc};
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, Row, params, params_from_iter};

use super::message_ids;
use super::rows::{ms, opt_time, small, sql_limit, time};
use crate::{Attempt, DeliveryFilter, DeliveryRecord, DeliveryState, Result};

/// `d.source_id` is `''` when it is the event's own source (every delivery
/// ingest writes since version 12); only the privacy job's notices, whose
/// event belongs to the privacy source, name another.
const RECORD_COLUMNS: &str = "d.id, d.destination_id, COALESCE(NULLIF(d.source_id, ''), e.source_id), d.event_seq, e.message_id,
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
/// (it is one of four fixed words) so SQLite can use the partial indexes. A
/// message id is first resolved to its events' seqs (`message_ids`: there
/// is no index on it), passed as one JSON array.
fn where_clause(
    conn: &Connection,
    filter: &DeliveryFilter,
    state: Option<DeliveryState>,
) -> Result<(String, Vec<Value>)> {
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
        let seqs = message_ids::seqs(conn, message_id)?;
        let seqs: Vec<String> = seqs.iter().map(i64::to_string).collect();
        values.push(Value::Text(format!("[{}]", seqs.join(","))));
        clauses.push(format!(
            "d.event_seq IN (SELECT value FROM json_each(?{}))",
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
    Ok((sql, values))
}

/// Newest first; `filter.limit == 0` means no limit.
pub(super) fn list_deliveries(
    conn: &Connection,
    filter: &DeliveryFilter,
) -> Result<Vec<DeliveryRecord>> {
    let (clause, mut values) = where_clause(conn, filter, filter.state)?;
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
         FROM attempts WHERE delivery_id = ?1 ORDER BY n",
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
/// history; `first_attempt_at` is cleared so the retry window starts afresh
/// at the next attempt. A delivery never attempted (held back by an open
/// breaker, or dead-lettered by the pending cap) has no attempt to start it
/// and would be measured from its event's arrival again, dead at once: its
/// `first_attempt_at` becomes the replay time, where its fresh window starts.
pub(super) fn replay(
    conn: &Connection,
    filter: &DeliveryFilter,
    now: DateTime<Utc>,
) -> Result<u64> {
    let (clause, mut values) = where_clause(conn, filter, Some(DeliveryState::Dead))?;
    values.push(Value::Integer(sql_limit(filter.limit)));
    let limit_param = values.len();
    values.push(Value::Integer(ms(now)));
    let now_param = values.len();
    let sql = format!(
        "UPDATE deliveries SET state = 'pending', next_attempt_at = ?{now_param},
                lease_until = NULL,
                first_attempt_at = CASE WHEN attempts = 0 THEN ?{now_param} END,
                updated_at = ?{now_param}
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
///
/// There is no index on `received_at` (it cost every append a fourth
/// B-tree insert): events are stored in time order, give or take the few
/// milliseconds between a call's arrival and its commit and the profile
/// engine's messages prepared ahead (`schedule_ahead`, 60 s), so the
/// candidates are the events below [`time_boundary`], found by binary
/// search over seqs, each still checked against `before`. An event stored
/// after a newer one is pruned once the search passes it: at most that
/// offset late, never early.
pub(super) fn prune_chunk(conn: &Connection, before: DateTime<Utc>, chunk: u32) -> Result<u64> {
    let before = ms(before);
    let (lowest, highest): (Option<i64>, Option<i64>) =
        conn.query_row("SELECT min(seq), max(seq) FROM events", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
    let (Some(lowest), Some(highest)) = (lowest, highest) else {
        return Ok(0);
    };
    let mut first_from = conn.prepare_cached(
        "SELECT seq, received_at FROM events WHERE seq >= ?1 ORDER BY seq LIMIT 1",
    )?;
    let old_below = time_boundary(lowest, highest.saturating_add(1), before, |seq| {
        first_from
            .query_row([seq], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
    })?;
    // The newest event is never a candidate.
    let below = old_below.min(highest);
    let seqs = conn
        .prepare_cached(
            "SELECT e.seq FROM events e WHERE e.seq < ?3 AND e.received_at < ?1
               AND e.seq IS NOT (SELECT event_seq FROM deliveries ORDER BY id DESC LIMIT 1)
               AND NOT EXISTS (SELECT 1 FROM deliveries d
                               WHERE d.event_seq = e.seq AND d.state = 'pending')
             ORDER BY e.seq
             LIMIT ?2",
        )?
        .query_map(params![before, i64::from(chunk), below], |r| {
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
    if !seqs.is_empty() {
        message_ids::forget_pruned(conn)?;
    }
    Ok(seqs.len() as u64)
}

/// The first seq in `[lo, hi)` from which, read as a time-ordered list, the
/// events were received at or after `before` (`hi` when none was). `first`
/// returns the first stored `(seq, received_at)` at or after a seq, so
/// gaps left by retention are skipped. About log2(hi − lo) lookups.
pub(super) fn time_boundary<E>(
    mut lo: i64,
    mut hi: i64,
    before: i64,
    mut first: impl FnMut(i64) -> std::result::Result<Option<(i64, i64)>, E>,
) -> std::result::Result<i64, E> {
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match first(mid)? {
            Some((seq, at)) if seq < hi && at < before => lo = seq + 1,
            _ => hi = mid,
        }
    }
    Ok(lo)
}

#[cfg(test)]
mod tests {
    use super::time_boundary;

    /// `time_boundary` over rows `(seq, received_at)` held in a vector.
    fn boundary(rows: &[(i64, i64)], before: i64) -> i64 {
        let lo = rows.first().map_or(0, |r| r.0);
        let hi = rows.last().map_or(0, |r| r.0 + 1);
        time_boundary(lo, hi, before, |seq| {
            Ok::<_, ()>(rows.iter().copied().find(|r| r.0 >= seq))
        })
        .unwrap_or(-1)
    }

    #[test]
    fn finds_the_first_event_at_or_after_the_cutoff() {
        let rows: Vec<(i64, i64)> = (1..=1000).map(|s| (s, s * 10)).collect();
        assert_eq!(boundary(&rows, 5_000), 500);
        assert_eq!(boundary(&rows, 5_001), 501);
        assert_eq!(boundary(&rows, 0), 1, "nothing is old");
        assert_eq!(boundary(&rows, 1_000_000), 1001, "everything is old");
        assert_eq!(boundary(&[], 10), 0, "an empty table");
    }

    #[test]
    fn skips_gaps_left_by_earlier_pruning() {
        let rows = [(3, 30), (4, 40), (90, 900), (91, 910), (500, 5000)];
        assert_eq!(boundary(&rows, 905), 91);
        // Any seq in the gap names the same events.
        assert!((5..=90).contains(&boundary(&rows, 100)));
        assert_eq!(boundary(&rows, 6000), 501);
    }

    #[test]
    fn an_event_prepared_ahead_only_holds_back_what_follows_it() {
        // Seq 50 was stored with a time 60 s ahead of its neighbours.
        let mut rows: Vec<(i64, i64)> = (1..=100).map(|s| (s, s * 1_000)).collect();
        rows[49].1 = 110_000;
        let b = boundary(&rows, 80_000);
        // Never past an event that is not old: everything below the
        // boundary either is old or is checked again against the cutoff.
        assert!(b <= 80, "{b}");
        assert!(
            rows.iter()
                .filter(|r| r.0 < b)
                .all(|r| r.1 < 80_000 || r.0 == 50)
        );
    }
}
