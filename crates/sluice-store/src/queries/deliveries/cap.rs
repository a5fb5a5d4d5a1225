//! The cap on a destination's pending deliveries
//! (`delivery.max_pending_per_destination`): the excess, oldest first, is
//! dead-lettered without sending.

use chrono::{DateTime, Utc};

use crate::Result;
use crate::sql::{Db, args};

/// Destinations holding more than `cap` pending deliveries, with their
/// counts. It reads the partial index of pending rows only, so SQLite runs
/// it on a reader without holding up the writer.
pub(crate) async fn over_cap(db: &impl Db, cap: u64) -> Result<Vec<(String, u64)>> {
    db.query_map(
        "SELECT destination_id, COUNT(*) FROM deliveries
         WHERE state = 'pending' AND next_attempt_at IS NOT NULL
         GROUP BY destination_id HAVING COUNT(*) > $1",
        args![cap],
        |mut r| Ok((r.take(0)?, r.get(1)?)),
    )
    .await
}

/// Dead-letters the `count - cap` oldest pending, unleased deliveries of
/// `destination` (`count` as [`over_cap`] read it), with a reason naming
/// the cap, and returns how many. Work appended since the count is left for
/// the next round, so the cap never takes more than the excess; rows
/// another PostgreSQL node holds locked are skipped.
pub(crate) async fn dead_letter_over_cap(
    db: &impl Db,
    destination: &str,
    count: u64,
    cap: u64,
    now: DateTime<Utc>,
) -> Result<u64> {
    if count <= cap {
        return Ok(0);
    }
    let reason = format!(
        "dead-lettered without sending: the destination had {count} pending deliveries, \
         over its cap of {cap} (delivery.max_pending_per_destination); oldest first"
    );
    // MATERIALIZED: as a plain `IN (…)` subquery PostgreSQL's planner may
    // run the locking LIMIT more than once (a semi-join rescan), each run
    // skipping the rows the last one locked, and dead-letter more than the
    // excess.
    db.execute(
        &format!(
            "WITH over AS MATERIALIZED (
                 SELECT id FROM deliveries
                 WHERE destination_id = $1 AND state = 'pending'
                   AND (lease_until IS NULL OR lease_until <= $3)
                 ORDER BY id LIMIT $2{})
             UPDATE deliveries AS d SET state = 'dead', next_attempt_at = NULL,
             last_error = $4, updated_at = $3
             FROM over WHERE d.id = over.id AND d.state = 'pending'",
            db.dialect().skip_locked()
        ),
        args![destination, count - cap, now, reason.as_str()],
    )
    .await
}
