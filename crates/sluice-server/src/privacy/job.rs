//! One pass of the regulation job over the oldest unfinished regulation.
//!
//! While it scans and purges, the job holds the profile engine's lease
//! (`RegulationStore::seize_profile_lease`): an engine step that read the
//! subjects' events or profiles before the purge cannot commit after it,
//! and no engine step commits between the scan and the purge, so the scan's
//! view of profiles, identities and the engine's identify messages stays
//! exact. If the lease lapsed meanwhile (a scan longer than the lease TTL),
//! the step is abandoned before anything is purged and redone.

use std::collections::BTreeSet;

use std::time::Duration;

use chrono::{DateTime, Utc};
use sluice_api::Hook;
use sluice_store::{
    PERSONAS_SOURCE, PRIVACY_SOURCE, Regulation, RegulationCommit, Store, StoreError, SubjectData,
    SubjectPurge,
};

use super::JobConfig;

/// Subjects whose data one pass over the events looks for.
const SCAN_SUBJECTS: u32 = 1000;
/// Bounds of one purge commit, so the writer is never held for long.
const COMMIT_SUBJECTS: usize = 100;
const COMMIT_EVENTS: usize = 20_000;

/// Takes (or renews) the job lease and returns the oldest unfinished
/// regulation with up to [`SCAN_SUBJECTS`] pending subjects.
///
/// Having nothing to do is the usual case, and it is found out with a read
/// before the lease is touched: renewing the lease is a commit (an fsync
/// with SQLite), and made on every poll it had an idle node writing five
/// times a second, which also kept SQLite's write-ahead log from ever being
/// truncated. An idle node lets the lease lapse; whichever node first sees
/// work takes it.
pub async fn pick(
    store: &dyn Store,
    owner: &str,
    config: JobConfig,
) -> Result<Option<(Regulation, Vec<String>)>, StoreError> {
    if store.next_regulation(1).await?.is_none() {
        return Ok(None);
    }
    if !store
        .take_regulation_lease(owner, Utc::now(), config.lease_ttl)
        .await?
    {
        return Ok(None);
    }
    store.next_regulation(SCAN_SUBJECTS).await
}

/// How long `regulation` must still wait before its purge may scan, if
/// it must: a suppressing regulation waits `settle` from its creation
/// ([`super::settle_time`]). Others start at once.
pub fn unsettled(
    regulation: &Regulation,
    settle: Duration,
    now: DateTime<Utc>,
) -> Option<Duration> {
    if !sluice_api::admin::regulations::suppresses_and_purges(&regulation.regulation_type) {
        return None;
    }
    let settle = chrono::Duration::from_std(settle).unwrap_or(chrono::Duration::MAX);
    let ready = regulation.created_at.checked_add_signed(settle)?;
    (ready - now).to_std().ok().filter(|wait| !wait.is_zero())
}

/// Why `regulation` cannot be carried out, if it cannot.
pub async fn unworkable(
    store: &dyn Store,
    regulation: &Regulation,
) -> Result<Option<String>, StoreError> {
    let Some(source) = &regulation.source_id else {
        return Ok(None);
    };
    Ok(store
        .get_source(source)
        .await?
        .is_none()
        .then(|| format!("source_id: source '{source}' was deleted")))
}

/// Purges and notifies `pending` subjects of `regulation`, holding the
/// profile engine's lease throughout. Returns whether it made progress.
pub async fn work(
    store: &dyn Store,
    owner: &str,
    config: JobConfig,
    regulation: &Regulation,
    pending: Vec<String>,
    wake_delivery: &Hook,
) -> Result<bool, StoreError> {
    store
        .seize_profile_lease(owner, Utc::now(), config.lease_ttl)
        .await?;
    let worked = purge(store, owner, config, regulation, pending).await;
    // Hand the engine its lease back whatever happened (else it waits for
    // the lease to lapse).
    let released = store.release_profile_lease(owner).await;
    let worked = worked?;
    released?;
    if worked && regulation.notify {
        wake_delivery();
    }
    Ok(worked)
}

async fn purge(
    store: &dyn Store,
    owner: &str,
    config: JobConfig,
    regulation: &Regulation,
    pending: Vec<String>,
) -> Result<bool, StoreError> {
    let found = store
        .find_subject_data(pending.clone(), regulation.source_id.clone())
        .await?;
    // Whether computed traits or audiences send anywhere: their messages
    // reach destinations that no source names.
    let personas_send = store
        .list_computations()
        .await?
        .iter()
        .any(|c| !c.destination_ids.is_empty());
    let purges: Vec<SubjectPurge> = pending
        .into_iter()
        .zip(found)
        .map(|(id, data)| purge_of(regulation, id, data, personas_send))
        .collect();
    let mut slice = Vec::new();
    let mut events = 0;
    for purge in purges {
        events += purge.event_seqs.len();
        slice.push(purge);
        if slice.len() >= COMMIT_SUBJECTS || events >= COMMIT_EVENTS {
            let subjects = std::mem::take(&mut slice);
            if !commit(store, owner, regulation, subjects, config).await? {
                return Ok(false);
            }
            events = 0;
        }
    }
    if !slice.is_empty() && !commit(store, owner, regulation, slice, config).await? {
        return Ok(false);
    }
    // Marks the regulation finished once no subject is left.
    commit(store, owner, regulation, Vec::new(), config).await
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
    // The engine may have taken its lease back after it lapsed and
    // committed steps the scan did not see: start over.
    if !store
        .seize_profile_lease(owner, Utc::now(), config.lease_ttl)
        .await?
    {
        tracing::warn!(
            regulation = %regulation.id,
            "the profile engine's lease lapsed during a regulation step; redoing the step"
        );
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
/// sources the data came from: those of the stored events, and those the
/// profile engine saw the subject on (retention may have removed the
/// events, but the destinations still hold what they were sent). The
/// profile engine's own source stands for the destinations of computed
/// traits and audiences, affected when they send to a destination, the
/// subject has a profile and the regulation is not scoped to a source (a
/// scoped one keeps the profile).
fn purge_of(
    regulation: &Regulation,
    subject_id: String,
    data: SubjectData,
    personas_send: bool,
) -> SubjectPurge {
    let scope = regulation.source_id.as_deref();
    let mut affected: BTreeSet<String> = data
        .events
        .iter()
        .map(|(_, source)| source.clone())
        .chain(
            data.profile_sources
                .into_iter()
                .filter(|s| scope.is_none_or(|scoped| scoped == s)),
        )
        .filter(|s| s != PERSONAS_SOURCE && s != PRIVACY_SOURCE)
        .collect();
    if personas_send && scope.is_none() && !data.profile_ids.is_empty() {
        affected.insert(PERSONAS_SOURCE.to_owned());
    }
    SubjectPurge {
        subject_id,
        event_seqs: data.events.iter().map(|(seq, _)| *seq).collect(),
        profile_ids: data.profile_ids,
        affected_sources: affected.into_iter().collect(),
    }
}
