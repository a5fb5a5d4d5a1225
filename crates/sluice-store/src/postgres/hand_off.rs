//! [`crate::DeliveryStore::hand_off`]: a call read from the Kafka shape's
//! event log enters retry state with its first attempts, in one
//! transaction.
//!
//! The call is inserted as ingest inserts it (same deduplication check,
//! same delivery rows) but without counting it in usage, which the log's
//! reader counts; its deliveries are then found by the call and given
//! their reports (`delivery::apply`) before the commit. Nothing of it is
//! visible until then, so the dispatcher never claims a delivery whose
//! first attempt is still being recorded, and a node that dies mid-way
//! leaves nothing behind: the next owner of the partition reads the call
//! again and hands it off whole.

use std::time::Duration;

use deadpool_postgres::Pool;

use deadpool_postgres::Transaction;

use super::ingest::{CONFLICT_TRIES, GroupOptions, write};
use super::rows::{backend, get, pool_error};
use crate::{AppendRequest, AttemptReport, Result, StoreError};

pub(super) async fn hand_off(
    pool: &Pool,
    window: Option<Duration>,
    request: &AppendRequest,
    reports: Vec<(String, AttemptReport)>,
) -> Result<bool> {
    let opts = GroupOptions {
        window,
        usage_shard: 0,
        usage: false,
    };
    let mut client = pool.get().await.map_err(pool_error)?;
    let mut tries = 0;
    loop {
        tries += 1;
        let tx = client.transaction().await.map_err(backend)?;
        let stored = match write(&tx, &[request], opts).await {
            Ok(outcomes) => outcomes.first().is_some_and(|o| o.stored > 0),
            // Another node stored the call meanwhile: written again, the
            // check sees its copy.
            Err(StoreError::Conflict(_)) if tries < CONFLICT_TRIES => continue,
            Err(e) => return Err(e),
        };
        if !stored {
            return Ok(false);
        }
        let mut applied = Vec::with_capacity(reports.len());
        for event in &request.events {
            let rows = unattempted(&tx, &request.source_id, &event.message_id).await?;
            for (destination, report) in &reports {
                if let Some((id, _)) = rows.iter().find(|(_, d)| d == destination) {
                    let mut report = report.clone();
                    report.delivery_id = *id;
                    for attempt in &mut report.attempts {
                        attempt.delivery_id = *id;
                    }
                    applied.push(report);
                }
            }
        }
        super::delivery::apply(&tx, &applied).await?;
        tx.commit().await.map_err(backend)?;
        return Ok(true);
    }
}

/// The deliveries just inserted for the call `message_id` of `source_id`,
/// as `(delivery id, destination id)`.
async fn unattempted(
    tx: &Transaction<'_>,
    source_id: &str,
    message_id: &str,
) -> Result<Vec<(i64, String)>> {
    let rows = tx
        .query(
            "SELECT d.id, d.destination_id FROM events e JOIN deliveries d ON d.event_seq = e.seq
             WHERE e.message_id = $2 AND e.source_id = $1 AND d.state = 'pending'
               AND d.attempts = 0",
            &[&source_id, &message_id],
        )
        .await
        .map_err(backend)?;
    rows.iter().map(|r| Ok((get(r, 0)?, get(r, 1)?))).collect()
}
