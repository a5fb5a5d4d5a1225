//! User deletion and suppression at run time (see `docs/privacy.md`):
//! - the suppression sync: every node applies the store's suppression
//!   changes to its in-memory set and flushes suppressed counts, every
//!   [`SUPPRESSION_SYNC`];
//! - the regulation job: on exactly one node at a time (a lease in the
//!   database), it takes the oldest unfinished regulation (a suppressing
//!   one once it has settled: [`settle_time`]), finds each
//!   pending subject's data in one pass over the events, and commits the
//!   purge and the delete notifications a slice of subjects at a time. Each
//!   slice commits with the subjects' `done` marks, so after `kill -9` the
//!   next holder of the lease continues with the subjects not yet done and
//!   nothing is purged or notified twice. It holds the profile engine's
//!   lease while it purges (see `job`).
//! - `job`: one pass over a regulation; `failures`: when the job gives a
//!   regulation up (`FAILED`).

mod failures;
mod job;
#[cfg(test)]
mod job_tests;

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use failures::{Failures, Verdict};
use sluice_api::Hook;
use sluice_api::suppression::Suppressions;
use sluice_store::{Store, keys};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How often each node catches up with suppression changes (the bound on
/// how long another node's regulation takes to block ingest here).
pub const SUPPRESSION_SYNC: Duration = Duration::from_millis(500);

/// Timing of the regulation job.
#[derive(Debug, Clone, Copy)]
pub struct JobConfig {
    pub poll_interval: Duration,
    pub lease_ttl: Duration,
    /// How long after its creation a suppressing regulation's purge may
    /// start ([`settle_time`]).
    pub settle: Duration,
}

/// How long a `SUPPRESS_WITH_DELETE` regulation waits before its purge
/// scans: until every node has applied the suppression (one sync, and one
/// more for a sync already under way) and every call that passed a node's
/// check before that has committed or failed (`storage.timeout_ms` bounds
/// an ingest commit). A scan any earlier could miss such a call, keep it,
/// and let the profile engine rebuild the deleted profile from it.
pub fn settle_time(storage_timeout: Duration) -> Duration {
    storage_timeout + 2 * SUPPRESSION_SYNC
}

/// Keeps `suppressions` current until `stop` flips.
pub fn spawn_sync(
    store: Arc<dyn Store>,
    suppressions: Arc<Suppressions>,
    mut stop: watch::Receiver<bool>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(SUPPRESSION_SYNC);
        loop {
            tokio::select! {
                changed = stop.changed() => {
                    if changed.is_err() || *stop.borrow() {
                        let _ = suppressions.flush(store.as_ref()).await;
                        return;
                    }
                }
                _ = tick.tick() => {
                    if let Err(e) = suppressions.refresh(store.as_ref()).await {
                        sluice_store::warn_every!(sluice_store::log_gate::BACKGROUND_EVERY, e, "refreshing suppressions");
                    }
                    if let Err(e) = suppressions.flush(store.as_ref()).await {
                        sluice_store::warn_every!(sluice_store::log_gate::BACKGROUND_EVERY, e, "flushing suppressed counts");
                    }
                }
            }
        }
    })
}

/// Runs regulation jobs whenever this node holds the lease.
pub fn spawn_job(
    store: Arc<dyn Store>,
    config: JobConfig,
    wake_delivery: Hook,
    mut stop: watch::Receiver<bool>,
) -> JoinHandle<()> {
    let owner = keys::new_id("regnode");
    tokio::spawn(async move {
        let mut failures = Failures::default();
        loop {
            let pause = match round(
                store.as_ref(),
                &owner,
                config,
                &wake_delivery,
                &mut failures,
            )
            .await
            {
                Ok(true) => None,
                Ok(false) => Some(config.poll_interval),
                Err(wait) => Some(wait),
            };
            if let Some(pause) = pause {
                tokio::select! {
                    _ = tokio::time::sleep(pause) => {}
                    changed = stop.changed() => {
                        if changed.is_err() || *stop.borrow() {
                            let _ = store.release_regulation_lease(&owner).await;
                            return;
                        }
                    }
                }
            } else if *stop.borrow() {
                let _ = store.release_regulation_lease(&owner).await;
                return;
            }
        }
    })
}

/// One round: `Ok(true)` when there was work, `Ok(false)` when idle,
/// `Err(wait)` after a failed try to be retried after `wait`, or when the
/// oldest regulation may not start for `wait` yet.
async fn round(
    store: &dyn Store,
    owner: &str,
    config: JobConfig,
    wake_delivery: &Hook,
    failures: &mut Failures,
) -> Result<bool, Duration> {
    let (regulation, pending) = match job::pick(store, owner, config).await {
        Ok(Some(next)) => next,
        Ok(None) => return Ok(false),
        Err(e) => {
            sluice_store::warn_every!(
                sluice_store::log_gate::BACKGROUND_EVERY,
                e,
                "regulation job"
            );
            return Ok(false);
        }
    };
    if let Some(wait) = job::unsettled(&regulation, config.settle, Utc::now()) {
        return Err(wait);
    }
    let outcome = match job::unworkable(store, &regulation).await {
        Ok(Some(reason)) => {
            give_up(store, owner, &regulation.id, &reason).await;
            return Ok(true);
        }
        Ok(None) => job::work(store, owner, config, &regulation, pending, wake_delivery).await,
        Err(e) => Err(e),
    };
    match outcome {
        Ok(worked) => {
            failures.clear();
            Ok(worked)
        }
        Err(e) => {
            tracing::warn!(regulation = %regulation.id, error = %e, "regulation step failed");
            match failures.failed(&regulation.id, config.poll_interval) {
                Verdict::Retry(wait) => Err(wait),
                Verdict::GiveUp { tries } => {
                    let reason = format!("gave up after {tries} failed tries in a row: {e}");
                    give_up(store, owner, &regulation.id, &reason).await;
                    Ok(true)
                }
            }
        }
    }
}

/// Marks a regulation `FAILED`; if even that fails it stays unfinished and
/// is tried again.
async fn give_up(store: &dyn Store, owner: &str, id: &str, reason: &str) {
    tracing::warn!(regulation = %id, reason, "regulation failed");
    if let Err(e) = store.fail_regulation(owner, id, reason, Utc::now()).await {
        tracing::warn!(regulation = %id, error = %e, "marking a regulation failed");
    }
}
