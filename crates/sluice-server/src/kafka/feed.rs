//! The delivery consumer: reads this node's partitions of the event topic,
//! sends each call once per destination, and commits a partition's offset
//! only up to the oldest call not yet dealt with (delivered, or durably in
//! the store's retry state; see `sluice_log::watermark`). So `kill -9` of
//! a node loses nothing: whoever takes its partitions over starts at the
//! committed offsets, and sends again at most the calls that were in
//! flight or finished since the last commit (about a second's worth).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::dedup::{Dedup, Keys};
use super::usage::Usage;
use crate::log_metrics::LogCounters;
use sluice_api::suppression::Suppressions;
use sluice_delivery::FirstAttempts;
use sluice_log::kafka::{ConsumedRecord, LogConsumer, Positions};
use sluice_log::watermark::{Position, Read, Watermarks};
use sluice_store::log_record::LogRecord;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;

/// How often finished offsets are committed.
const COMMIT_EVERY: Duration = Duration::from_secs(1);
/// How long a poll waits for a record.
const POLL_WAIT: Duration = Duration::from_millis(200);
/// The most records one poll takes.
const POLL_MAX: usize = 500;
/// The wait before trying again a store that could not be read or written.
const STORE_RETRY: Duration = Duration::from_secs(1);

/// The consumer's bounds.
pub(super) struct Limits {
    /// Calls in flight at once on this node (`delivery.max_in_flight`).
    pub room: usize,
    /// How long shutdown waits for calls in flight (`delivery.shutdown_grace_ms`).
    pub grace: Duration,
    /// Deduplication of client retries; `None` is off.
    pub dedup: Option<Dedup>,
}

/// What a call read from the log goes through.
pub(super) struct Senders {
    /// First attempts, and the hand-off of what fails.
    pub first: Arc<FirstAttempts>,
    /// Users suppressed since ingest accepted their calls.
    pub suppressions: Arc<Suppressions>,
    /// Usage counts of the calls read.
    pub usage: Arc<Usage>,
    /// What was done with the calls of partitions taken over.
    pub counters: Arc<LogCounters>,
}

/// Which offsets of this node's partitions may be committed.
pub(super) type Marks = Arc<Mutex<Watermarks>>;

fn held(m: &Marks) -> std::sync::MutexGuard<'_, Watermarks> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What happens to partitions the group takes away: this node stops
/// counting them as its own, so their calls still waiting for a free slot
/// are given up rather than sent (`FirstAttempts::send`), and the consumer
/// commits how far it got in them, with the calls past that offset it
/// finished. The new owner reads again from the oldest call not finished
/// here and skips the finished ones, so a rebalance sends twice at most
/// the requests on the wire at that moment.
///
/// With deduplication on, the keys of the calls below those positions are
/// saved first, so the new owner drops their retries; when they cannot be
/// saved nothing is committed, and the new owner reads those calls again
/// (and learns their keys) from the last commit.
pub(super) fn revoked_positions(
    marks: &Marks,
    keys: Option<Arc<Keys>>,
    usage: Arc<Usage>,
) -> Positions {
    let marks = marks.clone();
    Arc::new(move |revoked: &[i32]| {
        let positions = held(&marks).release(revoked);
        let below = offsets(&positions);
        usage.save_now(&below, revoked);
        match keys.as_ref().map(|keys| keys.save_now(&below)) {
            Some(Err(error)) => {
                tracing::warn!(
                    partitions = ?revoked,
                    %error,
                    "saving deduplication keys of partitions handed over failed; \
                     their new owner reads again from the last commit"
                );
                Vec::new()
            }
            _ => positions,
        }
    })
}

/// Runs until `stop` turns true, then waits up to the grace for calls in
/// flight, commits what finished and leaves the group.
pub(super) async fn run(
    consumer: LogConsumer,
    marks: Marks,
    senders: Senders,
    limits: Limits,
    mut stop: watch::Receiver<bool>,
) {
    let senders = Arc::new(senders);
    let room = Arc::new(Semaphore::new(limits.room.max(1)));
    let mut tasks = JoinSet::new();
    let mut committed_at = Instant::now();
    let mut dedup = limits.dedup;
    while !*stop.borrow() {
        while tasks.try_join_next().is_some() {}
        if committed_at.elapsed() >= COMMIT_EVERY {
            commit(&consumer, &marks, &senders.usage, dedup.as_mut()).await;
            committed_at = Instant::now();
        }
        let free = room.available_permits();
        if free == 0 {
            tokio::select! {
                _ = tasks.join_next() => {}
                _ = stop.changed() => {}
            }
            continue;
        }
        let polled = tokio::select! {
            polled = consumer.poll(free.min(POLL_MAX), POLL_WAIT) => polled,
            _ = stop.changed() => break,
        };
        if let Some(e) = polled.error {
            sluice_store::warn_every!(
                sluice_store::log_gate::BACKGROUND_EVERY,
                e,
                "reading the event log failed"
            );
            if polled.records.is_empty() {
                tokio::time::sleep(STORE_RETRY).await;
                continue;
            }
        }
        // A poll can hold records of a partition the group took away during
        // that same poll: they are the new owner's now.
        let assigned = consumer.assignment().ok();
        for batch in polled.records {
            if assigned
                .as_ref()
                .is_some_and(|a| !a.contains(&batch.partition))
            {
                continue;
            }
            if !held(&marks).holds(batch.partition)
                && let Some(first) = batch.records.first()
            {
                let partition = batch.partition;
                take_over(&consumer, &marks, dedup.as_mut(), partition).await;
                senders.usage.take_over(partition, first.offset).await;
            }
            for record in batch.records {
                let read = held(&marks).read(record.partition, record.offset);
                match read {
                    Read::InFlight => continue,
                    Read::Again => {
                        senders.counters.read_again.fetch_add(1, Ordering::Relaxed);
                    }
                    Read::Done => {
                        senders.counters.skipped.fetch_add(1, Ordering::Relaxed);
                    }
                    Read::New => {}
                }
                let retry = dedup.as_mut().is_some_and(|d| !d.first(&record));
                if read == Read::Done || retry {
                    // Finished by the partition's last owner, or a retry of
                    // a call already read: dealt with, and only counted.
                    count(&senders.usage, &record, retry);
                    held(&marks).finished(record.partition, record.offset);
                    continue;
                }
                let Ok(permit) = Arc::clone(&room).acquire_owned().await else {
                    break;
                };
                let (senders, marks, stop) = (senders.clone(), marks.clone(), stop.clone());
                tasks.spawn(async move {
                    let _permit = permit;
                    if deliver(&senders, &record, &marks, stop).await {
                        held(&marks).finished(record.partition, record.offset);
                    }
                });
            }
        }
    }
    let drained = async { while tasks.join_next().await.is_some() {} };
    if tokio::time::timeout(limits.grace, drained).await.is_err() {
        tracing::warn!("calls still in flight at shutdown are left to the next owner");
    }
    commit(&consumer, &marks, &senders.usage, dedup.as_mut()).await;
    consumer.close().await;
}

/// A partition newly this node's: learns which calls past its committed
/// offset the last owner finished, and the keys it saved for
/// deduplication. A question the broker or the store cannot answer leaves
/// those calls to be sent again.
async fn take_over(
    consumer: &LogConsumer,
    marks: &Marks,
    dedup: Option<&mut Dedup>,
    partition: i32,
) {
    match consumer.committed(partition).await {
        Ok(Some((offset, metadata))) => {
            let skipped = held(marks).inherit(partition, offset, &metadata);
            tracing::info!(
                partition,
                offset,
                skipped,
                "taking over an event log partition"
            );
        }
        Ok(None) => {}
        Err(e) => sluice_store::warn_every!(
            sluice_store::log_gate::BACKGROUND_EVERY,
            e,
            "reading a partition's committed offset failed; its calls finished past it are sent again"
        ),
    }
    if let Some(dedup) = dedup {
        dedup.load(partition).await;
    }
}

/// Counts a call that is not sent.
fn count(usage: &Usage, consumed: &ConsumedRecord, retry: bool) {
    if let Ok(record) = LogRecord::decode(&consumed.payload) {
        usage.read(consumed.partition, consumed.offset, &record, retry);
    }
}

/// `(partition, offset)` of each position.
fn offsets(positions: &[Position]) -> Vec<(i32, i64)> {
    positions.iter().map(|p| (p.partition, p.offset)).collect()
}

/// Delivers one record; true once it is dealt with. False when the node
/// stops first or the record's partition moves away before it is sent:
/// the record stays uncommitted, for the next owner.
async fn deliver(
    senders: &Senders,
    consumed: &ConsumedRecord,
    marks: &Marks,
    stop: watch::Receiver<bool>,
) -> bool {
    let first = &senders.first;
    let record = match LogRecord::decode(&consumed.payload) {
        Ok(record) => record,
        Err(e) => {
            // Not a call Sluice appended (another producer on the topic):
            // nothing to deliver, and never deliverable.
            tracing::warn!(
                partition = consumed.partition,
                offset = consumed.offset,
                error = %e,
                "skipping a record of the event log that is not a call"
            );
            return true;
        }
    };
    senders
        .usage
        .read(consumed.partition, consumed.offset, &record, false);
    if record.blocked.is_some() {
        // Counted, never delivered.
        return true;
    }
    if senders.suppressions.suppresses_logged(
        &record.source_id,
        &record.event_type,
        &record.body,
        record.received_at,
    ) {
        return true;
    }
    let sent = loop {
        let ours = || held(marks).holds(consumed.partition);
        match first.send(&record, &ours).await {
            Ok(sent) if sent.given_up => return false,
            Ok(sent) => break sent,
            Err(e) => {
                sluice_store::warn_every!(
                    sluice_store::log_gate::BACKGROUND_EVERY,
                    e,
                    "reading destinations failed; the call waits"
                );
                if !pause(&stop).await {
                    return false;
                }
            }
        }
    };
    loop {
        match first.hand_off(&record, &sent).await {
            Ok(()) => return true,
            Err(e) => {
                sluice_store::warn_every!(
                    sluice_store::log_gate::BACKGROUND_EVERY,
                    e,
                    "handing a failed first attempt to retry state failed; trying again"
                );
                if !pause(&stop).await {
                    return false;
                }
            }
        }
    }
}

/// Waits before another try; false when the node is stopping.
async fn pause(stop: &watch::Receiver<bool>) -> bool {
    let mut stop = stop.clone();
    let slept = tokio::select! {
        () = tokio::time::sleep(STORE_RETRY) => true,
        _ = stop.wait_for(|s| *s) => false,
    };
    slept && !*stop.borrow()
}

/// Commits each held partition up to its oldest call in flight, with the
/// calls past it that are finished, after storing the usage counts and
/// saving the keys for deduplication of the calls below those offsets.
async fn commit(consumer: &LogConsumer, m: &Marks, usage: &Usage, dedup: Option<&mut Dedup>) {
    let Ok(assigned) = consumer.assignment() else {
        return;
    };
    let positions = {
        let mut w = held(m);
        w.keep(&assigned);
        w.to_commit()
    };
    usage.keep(&assigned);
    // Before the commit: the offsets committed must not pass what is
    // counted, or a new owner would start past calls never counted.
    let below = offsets(&positions);
    usage.save(&below).await;
    let mut dedup = dedup;
    if let Some(dedup) = dedup.as_deref_mut() {
        dedup.tidy(&assigned).await;
        if let Err(e) = dedup.save(&below).await {
            // Delivery does not wait on the database: the offsets move
            // all the same, and these keys stay in this node's memory
            // only (a retry that reaches another owner is sent again).
            // Holding the commits instead would grow the unsaved keys and
            // a crash's re-sends for as long as the database is down.
            sluice_store::warn_every!(
                sluice_store::log_gate::BACKGROUND_EVERY,
                e,
                "saving keys for deduplication failed; committing without them"
            );
        }
    }
    if positions.is_empty() {
        return;
    }
    match consumer.commit(&positions).await {
        Ok(()) => {
            held(m).committed(&positions);
            if let Some(dedup) = dedup {
                dedup.committed(&below);
            }
        }
        Err(e) => sluice_store::warn_every!(
            sluice_store::log_gate::BACKGROUND_EVERY,
            e,
            "committing event log offsets failed"
        ),
    }
}
