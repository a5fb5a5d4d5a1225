//! Deduplication of ingest by (source, messageId) over a window, shared by
//! every node.
//!
//! # Invariants
//! - **The check is in the database.** Nodes share nothing in memory, so
//!   the ingest transaction itself claims each (source, messageId) in
//!   `message_keys` with `INSERT … ON CONFLICT`: a row another transaction
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
//! - **A key names one (source, messageId).** The key is the first 128
//!   bits of SHA-256(source id, NUL, message id), as a `uuid`: two pairs
//!   share a key only by a collision of SHA-256 cut to 128 bits, which
//!   nobody can find on purpose, let alone for another sender's id.
//!
//! # Layout
//! `message_keys (key uuid, received_at)`, primary key `key`, a BRIN index
//! on `received_at` for trimming (a few pages; a BRIN entry is updated per
//! block range, not per row). One row per stored event of the window, one
//! more row write per event (docs/postgres.md). The key keeps the row and
//! its index entry small: against the source and message id as text it
//! halves the table and cuts the WAL of a claim from about 300 to 170
//! bytes.
//!
//! # Recovery
//! Nothing to rebuild: the rows commit with the events. Each node trims
//! rows older than the window about once a minute ([`expire`]), in
//! slices, so a trim never holds many row locks.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use deadpool_postgres::{Pool, Transaction};
use sha2::{Digest, Sha256};

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

/// Version 20: keys instead of the ids themselves. The rows of the window
/// are carried over, so a resend is still dropped across the upgrade.
pub(super) const SCHEMA_KEYS: &str = r#"
CREATE TABLE message_keys (
    key         uuid PRIMARY KEY,
    received_at bigint NOT NULL
);
CREATE INDEX message_keys_received_at ON message_keys USING brin (received_at);
INSERT INTO message_keys (key, received_at)
SELECT encode(substring(sha256(convert_to(source_id, 'UTF8') || '\x00'::bytea
                               || convert_to(message_id, 'UTF8')) FROM 1 FOR 16), 'hex')::uuid,
       max(received_at)
FROM message_ids GROUP BY 1;
DROP TABLE message_ids;
"#;

/// The key of a source's message id, as PostgreSQL prints a `uuid`.
pub(super) fn key(source_id: &str, message_id: &str) -> String {
    let digest = Sha256::new()
        .chain_update(source_id.as_bytes())
        .chain_update([0u8])
        .chain_update(message_id.as_bytes())
        .finalize();
    let hex = hex::encode(&digest[..16]);
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

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
    // Each event's key, in request order; each key once, with the receive
    // time of its first occurrence, for the statement.
    let keyed: Vec<Vec<String>> = requests
        .iter()
        .map(|r| {
            r.events
                .iter()
                .map(|e| key(&r.source_id, &e.message_id))
                .collect()
        })
        .collect();
    let mut once: HashMap<&str, i64> = HashMap::new();
    for (request, keys) in requests.iter().zip(&keyed) {
        let at = ms(request.received_at);
        for k in keys {
            once.entry(k.as_str()).or_insert(at);
        }
    }
    let mut sorted: Vec<(&str, i64)> = once.into_iter().collect();
    sorted.sort_unstable();
    let keys: Vec<&str> = sorted.iter().map(|k| k.0).collect();
    let times: Vec<i64> = sorted.iter().map(|k| k.1).collect();
    let span = i64::try_from(window.as_millis()).unwrap_or(i64::MAX);
    let stmt = tx
        .prepare_cached(
            "INSERT INTO message_keys AS m (key, received_at)
             SELECT k::uuid, t FROM UNNEST($1::text[], $2::bigint[]) AS u(k, t)
             ON CONFLICT (key) DO UPDATE SET received_at = excluded.received_at
             WHERE m.received_at < excluded.received_at - $3::bigint
             RETURNING key::text",
        )
        .await
        .map_err(backend)?;
    let rows = tx
        .query(&stmt, &[&keys, &times, &span])
        .await
        .map_err(backend)?;
    let mut fresh: HashSet<String> = HashSet::with_capacity(rows.len());
    for row in &rows {
        fresh.insert(get(row, 0)?);
    }
    // The first occurrence of a claimed key is stored; later ones in the
    // group are duplicates of it.
    Ok(keyed
        .into_iter()
        .map(|keys| keys.into_iter().map(|k| fresh.remove(&k)).collect())
        .collect())
}

/// Deletes the rows received before `before` (unix ms), a slice at a time;
/// returns how many.
pub(super) async fn expire(pool: &Pool, before: i64) -> Result<u64> {
    let client = pool.get().await.map_err(pool_error)?;
    let stmt = client
        .prepare_cached(
            "DELETE FROM message_keys WHERE ctid = ANY(ARRAY(
                 SELECT ctid FROM message_keys WHERE received_at < $1 LIMIT $2))",
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
