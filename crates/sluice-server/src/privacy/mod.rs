//! User deletion and suppression at run time (see `docs/privacy.md`):
//! - the suppression sync: every node applies the store's suppression
//!   changes to its in-memory set and flushes suppressed counts, every
//!   [`SUPPRESSION_SYNC`];
//! - the regulation job: on exactly one node at a time (a lease in the
//!   database), it takes the oldest unfinished regulation, finds each
//!   pending subject's data in one pass over the events, and commits the
//!   purge and the delete notifications a slice of subjects at a time. Each
//!   slice commits with the subjects' `done` marks, so after `kill -9` the
//!   next holder of the lease continues with the subjects not yet done and
//!   nothing is purged or notified twice.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use sluice_api::Hook;
use sluice_api::suppression::Suppressions;
use sluice_store::{
    PERSONAS_SOURCE, Regulation, RegulationCommit, Store, StoreError, SubjectData, SubjectPurge,
    keys,
};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How often each node catches up with suppression changes (the bound on
/// how long another node's regulation takes to block ingest here).
pub const SUPPRESSION_SYNC: Duration = Duration::from_millis(500);

/// Subjects whose data one pass over the events looks for.
const SCAN_SUBJECTS: u32 = 1000;
/// Bounds of one purge commit, so the writer is never held for long.
const COMMIT_SUBJECTS: usize = 100;
const COMMIT_EVENTS: usize = 20_000;

/// Timing of the regulation job.
#[derive(Debug, Clone, Copy)]
pub struct JobConfig {
    pub poll_interval: Duration,
    pub lease_ttl: Duration,
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
                        tracing::warn!(error = %e, "refreshing suppressions");
                    }
                    if let Err(e) = suppressions.flush(store.as_ref()).await {
                        tracing::warn!(error = %e, "flushing suppressed counts");
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
        loop {
            let idle = match step(store.as_ref(), &owner, config, &wake_delivery).await {
                Ok(worked) => !worked,
                Err(e) => {
                    tracing::warn!(error = %e, "regulation job");
                    true
                }
            };
            if idle {
                tokio::select! {
                    _ = tokio::time::sleep(config.poll_interval) => {}
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

/// One pass: returns whether there was work.
async fn step(
    store: &dyn Store,
    owner: &str,
    config: JobConfig,
    wake_delivery: &Hook,
) -> Result<bool, StoreError> {
    if !store
        .take_regulation_lease(owner, Utc::now(), config.lease_ttl)
        .await?
    {
        return Ok(false);
    }
    let Some((regulation, pending)) = store.next_regulation(SCAN_SUBJECTS).await? else {
        return Ok(false);
    };
    let found = store
        .find_subject_data(pending.clone(), regulation.source_id.clone())
        .await?;
    let purges: Vec<SubjectPurge> = pending
        .into_iter()
        .zip(found)
        .map(|(id, data)| purge_of(&regulation, id, data))
        .collect();
    let mut slice = Vec::new();
    let mut events = 0;
    for purge in purges {
        events += purge.event_seqs.len();
        slice.push(purge);
        if slice.len() >= COMMIT_SUBJECTS || events >= COMMIT_EVENTS {
            if !commit(
                store,
                owner,
                &regulation,
                std::mem::take(&mut slice),
                config,
            )
            .await?
            {
                return Ok(false);
            }
            events = 0;
        }
    }
    if !slice.is_empty() && !commit(store, owner, &regulation, slice, config).await? {
        return Ok(false);
    }
    // Marks the regulation finished once no subject is left.
    commit(store, owner, &regulation, Vec::new(), config).await?;
    if regulation.notify {
        wake_delivery();
    }
    Ok(true)
}

async fn commit(
    store: &dyn Store,
    owner: &str,
    regulation: &Regulation,
    subjects: Vec<SubjectPurge>,
    config: JobConfig,
) -> Result<bool, StoreError> {
    // Renew first, so a long job never commits on a lapsed lease.
    if !store
        .take_regulation_lease(owner, Utc::now(), config.lease_ttl)
        .await?
    {
        return Ok(false);
    }
    store
        .commit_regulation(RegulationCommit {
            owner: owner.to_owned(),
            regulation_id: regulation.id.clone(),
            now: Utc::now(),
            subjects,
        })
        .await
}

/// What to purge for one subject. Affected sources are the customer's
/// sources the data came from (the profile engine's own messages count as
/// data to purge, not as a source to notify).
fn purge_of(regulation: &Regulation, subject_id: String, data: SubjectData) -> SubjectPurge {
    let affected: BTreeSet<String> = data
        .events
        .iter()
        .map(|(_, source)| source.clone())
        .filter(|s| s != PERSONAS_SOURCE)
        .collect();
    SubjectPurge {
        subject_id,
        event_seqs: data.events.iter().map(|(seq, _)| *seq).collect(),
        profile_ids: if regulation.source_id.is_some() {
            Vec::new()
        } else {
            data.profile_ids
        },
        affected_sources: affected.into_iter().collect(),
    }
}
