//! Deduplication of ingest by (source, messageId) over a window, shared by
//! every node: the events themselves are the memory.
//!
//! # Invariants
//! - **The check is the events insert.** An event stored with deduplication
//!   on carries `dedup_bucket` = its receive time divided by the window. The
//!   insert of a group skips an event when `events` already holds its
//!   (source, messageId) received within the window of it, either side
//!   (nodes' clocks differ a little); `RETURNING` names the stored, and the
//!   skipped are the duplicates.
//! - **Two nodes never both store one id.** The unique index on
//!   `(message_id, source_id, dedup_bucket)` makes an insert of an id that
//!   another transaction holds uncommitted in the same bucket wait for its
//!   outcome, and fail if it committed. The group is then written again
//!   from the start (`ingest::append_batch`), and this time the check sees
//!   the committed copy. A plain insert with that rare retry costs the
//!   database less than `ON CONFLICT DO NOTHING` on every row (a
//!   speculative insertion each): 1.4 against 4.3 µs more per row than no
//!   check at all, 30,000 rows on the 2-core machine
//!   (`bench/perf/pg-dedup-insert.sql`, BENCHMARKS.md "Deduplication").
//! - **An id is remembered exactly as long as the window.** The check
//!   compares receive times, not buckets, so a row older than the window
//!   never drops an event; the bucket only serves the index. What escapes
//!   both is two first copies of one id received at once on two nodes, on
//!   either side of a bucket's edge (once a window).
//! - **Dropped with the events.** An id whose event retention pruned or a
//!   regulation purged is stored again, as on SQLite.
//! - **One lock order.** A group inserts its events ordered by (messageId,
//!   source), whatever their seqs, so two nodes' groups wait on each
//!   other's ids in one order and never deadlock. A group repeating an id
//!   keeps its first occurrence before the statement.
//! - **Off is NULL.** With the window off (`dedup_window_secs = 0`) the
//!   bucket is NULL, which a unique index never compares equal: every call
//!   is stored, and such rows never drop a later one.
//!
//! # Layout
//! No table of its own: one `bigint` column of `events`, and the unique
//! index that replaces the plain index on `message_id` every event already
//! paid for. So deduplication adds no row write per event (it used to add
//! one, in `message_keys`, which the upgrade drops).
//!
//! # Recovery
//! Nothing to rebuild or trim: the memory commits and ages with the events.

use std::collections::HashSet;
use std::time::Duration;

use deadpool_postgres::Transaction;
use tokio_postgres::error::SqlState;

use super::ingest::Columns;
use super::rows::{backend, get};
use crate::{Result, StoreError};

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

/// Version 20: keys instead of the ids themselves.
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

/// Version 22: the events are the memory. The window's first copies, those
/// received since the oldest row of `message_keys` (which held exactly the
/// window), get a bucket of the default window's width, so a resend is
/// still dropped across the upgrade; the check reads only whether a bucket
/// is set, so another configured width changes nothing.
pub(super) const SCHEMA_IN_EVENTS: &str = r#"
ALTER TABLE events ADD COLUMN dedup_bucket bigint;
UPDATE events SET dedup_bucket = received_at / 86400000
WHERE seq IN (SELECT min(seq) FROM events
              WHERE received_at >= (SELECT min(received_at) FROM message_keys)
              GROUP BY message_id, source_id);
CREATE UNIQUE INDEX events_message_id_once ON events (message_id, source_id, dedup_bucket);
DROP INDEX events_message_id;
DROP TABLE message_keys;
"#;

/// Set in each transaction that inserts with the check, before the insert:
/// its plan is made once per connection, not at every execution.
///
/// PostgreSQL plans a prepared statement afresh for its first five runs and
/// then keeps a generic plan only when that looks no dearer than the fresh
/// ones. For this insert it never does with groups of a few calls, as the
/// collection API's single calls make: the generic plan assumes arrays of
/// ten, so a fresh plan for five looks cheaper, and every run pays for
/// planning the check. The plan is the same either way (a lookup per row).
/// Measured with `psql` on the 2-core machine (`bench/perf/pg-dedup-plan.sql`,
/// BENCHMARKS.md "Deduplication"): 2,000 inserts of 5 new ids took 345–363
/// µs each planned afresh against 257–286 µs generic (229–249 µs without
/// the check).
///
/// And without JIT compilation or a bitmap scan. Until `events` is first
/// analysed the planner has no statistics for the messageId, assumes each
/// one is shared by 0.5 % of the rows (the source is not compared through
/// the index, see [`insert`]), and so plans a bitmap scan whose estimated
/// cost, once the table is large, passes `jit_above_cost`: every execution
/// then compiled the plan first, 5–11 ms per group of single calls, which
/// ran at a third of their rate (`--backend postgres --only ingest`,
/// 2026-11-30, `auto_explain` showing `JIT: Functions: 25`). The check
/// reads a row or two per call: a plain index scan, never compiled. One
/// statement sets all three for the transaction.
pub(super) const GENERIC_PLAN: &str =
    "SELECT set_config('plan_cache_mode', 'force_generic_plan', true),
        set_config('jit', 'off', true), set_config('enable_bitmapscan', 'off', true)";

/// Inserts `events` and returns the seqs stored: all of them without a
/// `window`; with one, those whose (source, messageId) no event within the
/// window holds (see the invariants above). The caller passes each id of a
/// group once, with `events` sorted by id (`Columns::sort_by_id`).
/// [`StoreError::Conflict`]: another transaction committed one of the ids
/// in the meantime; the group must be written again.
///
/// The check's `OFFSET 0` keeps it a lookup per inserted row: without it
/// the planner may turn `NOT EXISTS` into an anti-join, and on a table it
/// has not analysed yet (a new one, as when Sluice starts on an empty
/// database) it hashes every event with a bucket to do so.
///
/// And the lookup can only be one of the unique index: the source and the
/// receive time are compared as expressions (`|| ''`, `+ 0`), which no
/// index serves. On a table not analysed yet the planner otherwise picks
/// `events_source_seq` (or `events_received_at`), and the generic plan
/// keeps that choice until the table is analysed, up to a minute later:
/// each inserted row then read every event of its source, and a group of
/// a hundred calls took seconds instead of a millisecond. The unique
/// index's first column, the messageId, finds the few rows to compare.
pub(super) async fn insert(
    tx: &Transaction<'_>,
    events: &Columns,
    window: Option<Duration>,
    node: &str,
) -> Result<HashSet<i64>> {
    if events.seqs.is_empty() {
        return Ok(HashSet::new());
    }
    let Some(window) = window else {
        let stmt = tx
            .prepare_cached(
                "INSERT INTO events (seq, source_id, message_id, event_type, received_at, body,
                                     blocked, person, counts, handed, handed_by)
                 SELECT u.*, CASE WHEN u.h IS NOT NULL THEN $11::text END
                 FROM UNNEST($1::bigint[], $2::text[], $3::text[], $4::text[], $5::bigint[],
                             $6::text[], $7::text[], $8::smallint[], $9::smallint[], $10::text[])
                      AS u(s, src, mid, ty, t, b, bl, p, n, h)",
            )
            .await
            .map_err(backend)?;
        let mut params = events.params();
        params.extend([
            &events.handed as &(dyn tokio_postgres::types::ToSql + Sync),
            &node,
        ]);
        tx.execute(&stmt, &params).await.map_err(backend)?;
        return Ok(events.seqs.iter().copied().collect());
    };
    let span = i64::try_from(window.as_millis()).unwrap_or(i64::MAX).max(1);
    let stmt = tx
        .prepare_cached(
            "INSERT INTO events (seq, source_id, message_id, event_type, received_at, body,
                                 blocked, person, counts, dedup_bucket, handed, handed_by)
             SELECT u.s, u.src, u.mid, u.ty, u.t, u.b, u.bl, u.p, u.n, u.t / $10::bigint, u.h,
                    CASE WHEN u.h IS NOT NULL THEN $12::text END
             FROM UNNEST($1::bigint[], $2::text[], $3::text[], $4::text[], $5::bigint[],
                         $6::text[], $7::text[], $8::smallint[], $9::smallint[], $11::text[])
                  AS u(s, src, mid, ty, t, b, bl, p, n, h)
             WHERE NOT EXISTS (
                 SELECT 1 FROM events o
                 WHERE o.message_id = u.mid AND o.dedup_bucket IS NOT NULL
                   AND o.source_id || '' = u.src
                   AND o.received_at + 0 BETWEEN u.t - $10::bigint AND u.t + $10::bigint
                 OFFSET 0)
             RETURNING seq",
        )
        .await
        .map_err(backend)?;
    let mut params = events.params();
    params.extend([
        &span as &(dyn tokio_postgres::types::ToSql + Sync),
        &events.handed,
        &node,
    ]);
    let rows = tx.query(&stmt, &params).await.map_err(|e| {
        if e.code() == Some(&SqlState::UNIQUE_VIOLATION) {
            StoreError::Conflict("an id another node stored at the same moment".into())
        } else {
            backend(e)
        }
    })?;
    rows.iter().map(|r| get::<i64>(r, 0)).collect()
}
