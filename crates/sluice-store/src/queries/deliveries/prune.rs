//! Retention: deleting old events with their deliveries and attempts, a
//! chunk per transaction.

use chrono::{DateTime, Utc};

use crate::Result;
use crate::sql::{Conn, Db, Param, Tx, args};

/// What one retention transaction did.
pub(crate) struct Pruned {
    /// Events chosen; fewer than the chunk means nothing is left to prune
    /// (PostgreSQL's retention loop reads it; SQLite's stops on `deleted`).
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub taken: usize,
    /// Events deleted (on PostgreSQL a chosen event is kept if a delivery
    /// of it was replayed meanwhile).
    pub deleted: u64,
}

/// Events retention leaves alone whatever their age. SQLite hands out seqs
/// and delivery ids as rowids (max + 1), so it keeps the newest event and
/// the newest delivery's event, and finds old events without an index on
/// `received_at` (see `sqlite::prune`); PostgreSQL keeps nothing
/// ([`Spare::default`]).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Spare {
    /// Only events below this seq are candidates.
    pub below: Option<i64>,
    /// An event that is kept.
    pub event: Option<i64>,
}

/// Deletes up to `chunk` events received before `before` that have no
/// pending delivery, with their deliveries and attempts, in one
/// transaction. Safe beside other PostgreSQL nodes: candidates are locked
/// `SKIP LOCKED` (two pruners split the work), and every delete re-checks
/// `state <> 'pending'`, so a delivery replayed meanwhile is kept, and
/// with it its event. (SQLite's one writer needs neither.)
pub(crate) async fn prune_chunk(
    conn: &mut impl Conn,
    before: DateTime<Utc>,
    chunk: u32,
    spare: Spare,
) -> Result<Pruned> {
    let tx = conn.begin().await?;
    let mut values = vec![Param::from(before), Param::from(chunk)];
    let mut kept = String::new();
    if let Some(below) = spare.below {
        values.push(Param::from(below));
        kept.push_str(&format!(" AND e.seq < ${}", values.len()));
    }
    if let Some(event) = spare.event {
        values.push(Param::from(event));
        kept.push_str(&format!(" AND e.seq <> ${}", values.len()));
    }
    let sql = format!(
        "SELECT e.seq FROM events e WHERE e.received_at < $1{kept}
           AND NOT EXISTS (SELECT 1 FROM deliveries d
                           WHERE d.event_seq = e.seq AND d.state = 'pending')
         ORDER BY e.seq LIMIT $2{lock}",
        lock = tx.dialect().skip_locked(),
    );
    let seqs = tx.query_map(&sql, &values, |r| r.get::<i64>(0)).await?;
    let deleted = if seqs.is_empty() {
        0
    } else {
        delete_events(&tx, &seqs).await?
    };
    tx.commit().await?;
    Ok(Pruned {
        taken: seqs.len(),
        deleted,
    })
}

/// Deletes the events `seqs` with their settled deliveries and those
/// deliveries' attempts; an event that still has a delivery stays.
/// Returns how many events were deleted.
async fn delete_events(db: &impl Db, seqs: &[i64]) -> Result<u64> {
    let list = db.dialect().int_list(1);
    let delivery_ids = db
        .query_map(
            &format!(
                "DELETE FROM deliveries
                 WHERE event_seq IN (SELECT value FROM {list}) AND state <> 'pending'
                 RETURNING id"
            ),
            args![seqs],
            |r| r.get::<i64>(0),
        )
        .await?;
    // A separate statement (on PostgreSQL a fresh snapshot): it also sees
    // attempts that a report committed while the delete above waited for
    // its row lock.
    db.execute(
        &format!("DELETE FROM attempts WHERE delivery_id IN (SELECT value FROM {list})"),
        args![&delivery_ids],
    )
    .await?;
    db.execute(
        &format!(
            "DELETE FROM events WHERE seq IN (SELECT value FROM {list})
               AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_seq = events.seq)"
        ),
        args![seqs],
    )
    .await
}
