//! Deduplication of ingest by (source, messageId) over a window, shared by
//! every node.
//!
//! # Invariants
//! - **The check is in the database.** Nodes share nothing in memory, so
//!   the ingest transaction itself claims each (source, messageId) in
//!   `message_ids` with `INSERT … ON CONFLICT`: a row another transaction
//!   committed within the window makes the event a duplicate; a row another
//!   transaction holds uncommitted makes this one wait for its outcome (the
//!   unique index's lock), so two nodes never both store one id. A claim
//!   rolls back with its group.
//! - **Expired rows never drop an event.** A row older than the window is
//!   taken over (`DO UPDATE … WHERE` it is older) rather than counted, so
//!   trimming the table is only about space, never correctness.
//! - **One claim per key per statement.** A group repeating an id (a batch,
//!   or two calls in one group) keeps its first occurrence before the
//!   statement, which may not touch a row twice; keys go in sorted order,
//!   so two nodes' groups lock them in one order and never deadlock.
//!
//! # Layout
//! `message_ids (source_id, message_id, received_at)`, primary key (source,
//! message id), a BRIN index on `received_at` for trimming (a few pages; a
//! BRIN entry is updated per block range, not per row). One row per stored
//! event of the window: about 100 bytes of heap and index each, one more
//! row write per event (docs/postgres.md).
//!
//! # Recovery
//! Nothing to rebuild: the rows commit with the events. Each node trims
//! rows older than the window about once a minute ([`expire`]), in
//! slices, so a trim never holds many row locks.

use std::collections::HashSet;
use std::time::Duration;

use deadpool_postgres::{Pool, Transaction};

use super::rows::{backend, get, ms, pool_error};
use crate::{AppendRequest, Result};

/// Version 13: the table behind deduplication, and duplicates in usage.
pub(super) const SCHEMA: &str = r#"
CREATE TABLE message_ids (
    source_id   text COLLATE "C" NOT NULL,
    message_id  text COLLATE "C" NOT NULL,
    received_at bigint NOT NULL,
    PRIMARY KEY (source_id, message_id)
);
CREATE INDEX message_ids_received_at ON message_ids USING brin (received_at);
ALTER TABLE usage ADD COLUMN duplicates bigint NOT NULL DEFAULT 0;
"#;

/// Rows deleted per statement when trimming.
const TRIM_SLICE: i64 = 10_000;

/// Which events of `requests` to store: per request, per event, `true` for
/// the first of its (source, messageId) that no transaction committed
/// within `window` before its receive time. Claims the kept ones.
pub(super) async fn claim(
    tx: &Transaction<'_>,
    requests: &[&AppendRequest],
    window: Duration,
) -> Result<Vec<Vec<bool>>> {
    let mut seen: HashSet<(&str, &str)> = HashSet::new();
    let mut keys: Vec<(&str, &str, i64)> = Vec::new();
    for request in requests {
        let at = ms(request.received_at);
        for event in &request.events {
            let key = (request.source_id.as_str(), event.message_id.as_str());
            if seen.insert(key) {
                keys.push((key.0, key.1, at));
            }
        }
    }
    keys.sort_unstable();
    let sources: Vec<&str> = keys.iter().map(|k| k.0).collect();
    let ids: Vec<&str> = keys.iter().map(|k| k.1).collect();
    let times: Vec<i64> = keys.iter().map(|k| k.2).collect();
    let span = i64::try_from(window.as_millis()).unwrap_or(i64::MAX);
    let stmt = tx
        .prepare_cached(
            "INSERT INTO message_ids AS m (source_id, message_id, received_at)
             SELECT * FROM UNNEST($1::text[], $2::text[], $3::bigint[])
             ON CONFLICT (source_id, message_id) DO UPDATE SET received_at = excluded.received_at
             WHERE m.received_at < excluded.received_at - $4::bigint
             RETURNING source_id, message_id",
        )
        .await
        .map_err(backend)?;
    let rows = tx
        .query(&stmt, &[&sources, &ids, &times, &span])
        .await
        .map_err(backend)?;
    let mut fresh: HashSet<(String, String)> = HashSet::with_capacity(rows.len());
    for row in &rows {
        fresh.insert((get(row, 0)?, get(row, 1)?));
    }
    let mut claimed: HashSet<(&str, &str)> = HashSet::with_capacity(fresh.len());
    Ok(requests
        .iter()
        .map(|request| {
            request
                .events
                .iter()
                .map(|event| {
                    let key = (request.source_id.as_str(), event.message_id.as_str());
                    fresh.contains(&(key.0.to_owned(), key.1.to_owned())) && claimed.insert(key)
                })
                .collect()
        })
        .collect())
}

/// Deletes the rows received before `before` (unix ms), a slice at a time;
/// returns how many.
pub(super) async fn expire(pool: &Pool, before: i64) -> Result<u64> {
    let client = pool.get().await.map_err(pool_error)?;
    let stmt = client
        .prepare_cached(
            "DELETE FROM message_ids WHERE ctid = ANY(ARRAY(
                 SELECT ctid FROM message_ids WHERE received_at < $1 LIMIT $2))",
        )
        .await
        .map_err(backend)?;
    let mut total = 0;
    loop {
        let n = client
            .execute(&stmt, &[&before, &TRIM_SLICE])
            .await
            .map_err(backend)?;
        total += n;
        if n < TRIM_SLICE as u64 {
            return Ok(total);
        }
    }
}
