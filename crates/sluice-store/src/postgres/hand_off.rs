//! [`crate::DeliveryStore::hand_off`]: a call read from the Kafka shape's
//! event log enters retry state with its first attempts, in one
//! transaction.
//!
//! The call is inserted as ingest inserts it (same deduplication check,
//! same delivery rows) but without counting it in usage, which the log's
//! reader counts; its deliveries are then found by the call and given
//! their reports (`delivery::apply`) before the commit. A task takes the
//! hand-offs waiting at once into one transaction, as ingest's writer
//! does (a failing group is written again one call at a time). Nothing of it is
//! visible until then, so the dispatcher never claims a delivery whose
//! first attempt is still being recorded, and a node that dies mid-way
//! leaves nothing behind: the next owner of the partition reads the call
//! again and hands it off whole.

use std::collections::HashMap;
use std::time::Duration;

use deadpool_postgres::{Pool, Transaction};
use tokio::sync::{mpsc, oneshot};

use super::ingest::{CONFLICT_TRIES, GroupOptions, write};
use super::rows::{backend, get, pool_error};
use crate::{AppendRequest, AttemptReport, ErrorKind, Result, StoreError};

/// Hand-offs waiting for the task; callers wait to enqueue past this.
const QUEUE_DEPTH: usize = 1024;
/// Hand-offs written in one transaction at most.
const MAX_GROUP: usize = 256;

struct Job {
    request: AppendRequest,
    reports: Vec<(String, AttemptReport)>,
    reply: oneshot::Sender<Result<bool>>,
}

/// The task that writes hand-offs, several per transaction: a destination
/// that fails fails many calls at once, and a transaction each would cost
/// the database a commit per call.
pub(super) struct HandOffs {
    queue: mpsc::Sender<Job>,
}

impl HandOffs {
    /// Starts the task on the current tokio runtime.
    pub(super) fn spawn(pool: Pool, window: Option<Duration>) -> HandOffs {
        let (queue, rx) = mpsc::channel(QUEUE_DEPTH);
        tokio::spawn(run(pool, window, rx));
        HandOffs { queue }
    }

    /// Hands `request` off in the next group; true once it is committed,
    /// false when the store already held the call.
    pub(super) async fn hand_off(
        &self,
        request: AppendRequest,
        reports: Vec<(String, AttemptReport)>,
    ) -> Result<bool> {
        let (reply, answer) = oneshot::channel();
        let job = Job {
            request,
            reports,
            reply,
        };
        self.queue.send(job).await.map_err(|_| StoreError::Closed)?;
        answer.await.map_err(|_| StoreError::Closed)?
    }
}

async fn run(pool: Pool, window: Option<Duration>, mut rx: mpsc::Receiver<Job>) {
    while let Some(first) = rx.recv().await {
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok(job) => group.push(job),
                Err(_) => break,
            }
        }
        match write_group(&pool, window, &group).await {
            Ok(stored) => answer(group, stored),
            // One call's fault must not fail the others: each alone.
            Err(_) if group.len() > 1 => {
                for job in group {
                    match write_group(&pool, window, std::slice::from_ref(&job)).await {
                        Ok(stored) => answer(vec![job], stored),
                        Err(e) => {
                            let _ = job.reply.send(Err(e));
                        }
                    }
                }
            }
            Err(e) => {
                for job in group {
                    let kind = e.kind().unwrap_or(ErrorKind::Internal);
                    let again = StoreError::backend(kind, format!("handing off: {e}"));
                    let _ = job.reply.send(Err(again));
                }
            }
        }
    }
}

fn answer(group: Vec<Job>, stored: Vec<bool>) {
    for (job, stored) in group.into_iter().zip(stored) {
        let _ = job.reply.send(Ok(stored));
    }
}

/// Writes `group` in one transaction; per job, whether its call was
/// stored (false: the store already held it).
async fn write_group(pool: &Pool, window: Option<Duration>, group: &[Job]) -> Result<Vec<bool>> {
    let opts = GroupOptions {
        window,
        usage_shard: 0,
        usage: false,
    };
    let requests: Vec<&AppendRequest> = group.iter().map(|j| &j.request).collect();
    let mut client = pool.get().await.map_err(pool_error)?;
    let mut tries = 0;
    loop {
        tries += 1;
        let tx = client.transaction().await.map_err(backend)?;
        // Nothing is leased at a hand-off: its deliveries carry reports.
        let outcomes = match write(&tx, &requests, opts, None).await {
            Ok((outcomes, _)) => outcomes,
            // Another node stored one of the calls meanwhile: written
            // again, the check sees its copy.
            Err(StoreError::Conflict(_)) if tries < CONFLICT_TRIES => continue,
            Err(e) => return Err(e),
        };
        let stored: Vec<bool> = outcomes.iter().map(|o| o.stored > 0).collect();
        let written: Vec<&Job> = (group.iter().zip(&stored))
            .filter(|(_, s)| **s)
            .map(|(j, _)| j)
            .collect();
        let calls: Vec<(&str, &str)> = (written.iter())
            .flat_map(|j| {
                let source = j.request.source_id.as_str();
                j.request
                    .events
                    .iter()
                    .map(move |e| (source, e.message_id.as_str()))
            })
            .collect();
        let rows = unattempted(&tx, &calls).await?;
        let mut applied = Vec::new();
        for job in written {
            for event in &job.request.events {
                for (destination, report) in &job.reports {
                    let key = (
                        job.request.source_id.clone(),
                        event.message_id.clone(),
                        destination.clone(),
                    );
                    if let Some(id) = rows.get(&key) {
                        let mut report = report.clone();
                        report.delivery_id = *id;
                        for attempt in &mut report.attempts {
                            attempt.delivery_id = *id;
                        }
                        applied.push(report);
                    }
                }
            }
        }
        super::delivery::apply(&tx, None, &applied).await?;
        tx.commit().await.map_err(backend)?;
        return Ok(stored);
    }
}

/// The deliveries just inserted for `calls` (source, messageId), by
/// (source, messageId, destination).
async fn unattempted(
    tx: &Transaction<'_>,
    calls: &[(&str, &str)],
) -> Result<HashMap<(String, String, String), i64>> {
    if calls.is_empty() {
        return Ok(HashMap::new());
    }
    let (sources, messages): (Vec<&str>, Vec<&str>) = calls.iter().copied().unzip();
    let rows = tx
        .query(
            "SELECT e.source_id, e.message_id, d.destination_id, d.id
             FROM UNNEST($1::text[], $2::text[]) AS c(src, mid)
             JOIN events e ON e.message_id = c.mid AND e.source_id = c.src
             JOIN deliveries d ON d.event_seq = e.seq
             WHERE d.state = 'pending' AND d.attempts = 0",
            &[&sources, &messages],
        )
        .await
        .map_err(backend)?;
    rows.iter()
        .map(|r| Ok(((get(r, 0)?, get(r, 1)?, get(r, 2)?), get(r, 3)?)))
        .collect()
}
