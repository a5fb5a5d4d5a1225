//! Usage counted from the committed events, not by the transaction that
//! stores them: ingest writes no counter row on the happy path.
//!
//! # Invariants
//! - **The event says what it counts.** Ingest writes `events.counts`: 1
//!   for a call, 2 for the first stored call of its request (which also
//!   counts the request). `NULL` counts nothing: events Sluice writes
//!   itself, and those of the Kafka shape, which counts from the topic.
//!   What an event cannot say goes into `usage` at ingest as before: a
//!   request none of whose calls was stored, and repeats dropped.
//! - **Counted once.** One cursor, `usage_read`, follows `events` in
//!   `(xact, seq)` order (the profile engine's order, see the version 3
//!   migration). A round counts every event past it whose transaction is
//!   older than the oldest one running, so final: none can commit behind
//!   it later. It adds them to `usage` (rows of shard [`SHARD`]) and moves
//!   the cursor to that oldest transaction, in one transaction of its own.
//!   The cursor row is locked `SKIP LOCKED`, so of several nodes one counts
//!   at a time and the others skip the round.
//! - **Read exact.** `usage_days` adds to the counter rows the events past
//!   the cursor, read in the same snapshot: a call is in usage as soon as
//!   its `200` is sent, counted once whether or not a round has passed.
//!   Its source is an expression no index serves, so that a read for one
//!   source walks the few events past the cursor, never all the source's
//!   events (`events_source_seq`, which a planner without statistics picks).
//! - **A deleted source counts nothing more.** Deleting a source deletes
//!   its counter rows; then [`forget_source`], holding the cursor, deletes
//!   any a round added meanwhile and takes the counts off its calls past
//!   the cursor.
//!
//! # Cost
//! A round is one statement: a range of the index `events_xact_seq`, each
//! event's source, time and count read while the rows are still in
//! memory, aggregated as it streams into a row per (source, day), and one
//! counter row written per (source, day), once a second. Ingest wrote one
//! counter row per group of calls instead, which for single calls was
//! most of a row write per call.
//!
//! # Recovery
//! Nothing to rebuild: `kill -9` loses at most a round that did not
//! commit, and its cursor did not move. A call purged before a round
//! counted it is not counted.

use std::time::Duration;

use deadpool_postgres::{GenericClient, Pool};

use super::rows::{backend, get, pool_error};
use crate::Result;

/// The counter rows the rounds add to; ingest's rows are numbered from 0.
pub(super) const SHARD: i32 = -1;

/// How often a node tries a round.
const EVERY: Duration = Duration::from_secs(1);

/// The UTC day (`YYYY-MM-DD`, as `records::utc_day` writes it) of a
/// number of days since the epoch.
macro_rules! day_of {
    ($days:literal) => {
        concat!(
            "to_char(DATE '1970-01-01' + (",
            $days,
            ")::integer, 'YYYY-MM-DD')"
        )
    };
}

/// Version 28: what each event counts, the cursor, and the view that reads
/// both. The cursor starts at this migration's transaction: every event
/// with a count commits after it.
pub(super) const SCHEMA: &str = concat!(
    "
ALTER TABLE events ADD COLUMN counts smallint;
CREATE TABLE usage_read (
    id   integer PRIMARY KEY CHECK (id = 1),
    xact bigint NOT NULL,
    seq  bigint NOT NULL
);
INSERT INTO usage_read VALUES (1, pg_current_xact_id()::text::bigint, 0);
CREATE VIEW usage_days AS
SELECT source_id, day, api_calls, events, duplicates FROM usage
UNION ALL
SELECT e.source_id || '', ",
    day_of!("e.received_at / 86400000"),
    ", count(*) FILTER (WHERE e.counts = 2), count(*), 0
FROM events e
WHERE (e.xact, e.seq) > ((SELECT xact FROM usage_read), (SELECT seq FROM usage_read))
  AND e.counts IS NOT NULL
GROUP BY 1, 2;
"
);

/// Starts the rounds; they end when the pool is closed.
pub(super) fn spawn(pool: Pool) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        while !pool.is_closed() {
            tick.tick().await;
            if let Err(e) = round(&pool).await
                && !pool.is_closed()
            {
                crate::warn_every!(
                    crate::log_gate::BACKGROUND_EVERY,
                    e,
                    "counting usage; the calls wait for the next round"
                );
            }
        }
    });
}

/// One round, in a transaction of its own: adds every event past the
/// cursor and below the oldest running transaction to `usage`, and moves
/// the cursor to that transaction; nothing when another node holds the
/// cursor.
///
/// A round is bounded by transaction, not by rows: every event below
/// `upto` is final, so the cursor moves to `(upto, 0)` (seqs start at 1)
/// without finding the last event walked, and the walk streams into one
/// aggregate of a row per (source, day) whatever its length.
async fn round(pool: &Pool) -> Result<()> {
    let mut client = pool.get().await.map_err(pool_error)?;
    let tx = client.transaction().await.map_err(backend)?;
    let at = tx
        .query_opt(
            "SELECT xact, seq FROM usage_read WHERE id = 1 FOR UPDATE SKIP LOCKED",
            &[],
        )
        .await
        .map_err(backend)?;
    if let Some(at) = at {
        let (xact, seq): (i64, i64) = (get(&at, 0)?, get(&at, 1)?);
        tx.execute(COUNT, &[&xact, &seq, &SHARD])
            .await
            .map_err(backend)?;
    }
    tx.commit().await.map_err(backend)
}

/// The round's statement: `$1`, `$2` the cursor, `$3` the [`SHARD`].
const COUNT: &str = concat!(
    "WITH b AS (
         SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint AS upto
     ), g AS (
         SELECT e.source_id, e.received_at / 86400000 AS d,
                count(*) FILTER (WHERE e.counts = 2) AS calls, count(*) AS n
         FROM events e
         WHERE (e.xact, e.seq) > ($1, $2) AND e.xact < (SELECT upto FROM b)
           AND e.counts IS NOT NULL
         GROUP BY 1, 2
     ), added AS (
         INSERT INTO usage AS u (source_id, day, api_calls, events, duplicates, shard)
         SELECT source_id, ",
    day_of!("d"),
    ", calls, n, 0, $3::integer FROM g
         ON CONFLICT (source_id, day, shard) DO UPDATE
         SET api_calls = u.api_calls + excluded.api_calls, events = u.events + excluded.events
     ), moved AS (
         UPDATE usage_read r SET xact = b.upto, seq = 0 FROM b
         WHERE r.id = 1 AND (b.upto, 0::bigint) > (r.xact, r.seq)
     )
     SELECT 1"
);

/// Stops counting the deleted source `source_id`: deletes its counter rows
/// and takes the counts off its calls no round has counted yet, holding
/// the cursor so that no round runs meanwhile.
pub(super) async fn forget_source(pool: &Pool, source_id: &str) -> Result<()> {
    let mut client = pool.get().await.map_err(pool_error)?;
    let tx = client.transaction().await.map_err(backend)?;
    let at = tx
        .query_one(
            "SELECT xact, seq FROM usage_read WHERE id = 1 FOR UPDATE",
            &[],
        )
        .await
        .map_err(backend)?;
    let (xact, seq): (i64, i64) = (get(&at, 0)?, get(&at, 1)?);
    tx.execute(
        "UPDATE events SET counts = NULL
         WHERE source_id = $1 AND counts IS NOT NULL AND (xact, seq) > ($2, $3)",
        &[&source_id, &xact, &seq],
    )
    .await
    .map_err(backend)?;
    tx.execute("DELETE FROM usage WHERE source_id = $1", &[&source_id])
        .await
        .map_err(backend)?;
    tx.commit().await.map_err(backend)
}
