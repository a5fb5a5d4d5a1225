//! Time-driven work: profiles whose window changes are due, and the
//! whole-population jobs (recompute after a definition change, backfill of
//! a newly connected destination).

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde_json::Value;
use sluice_store::{JobProgress, ProfileCommit, ProfileJob, Store};

use super::Step;
use super::defs::Defs;
use super::diff::{Scope, diff, group_values, store_profile};
use super::load::load_records;
use crate::error::ProfileError;
use crate::message;
use crate::profile::Profile;

/// Profiles re-evaluated per sweep or job commit.
pub const PAGE: u32 = 2000;

/// A loaded profile: id, the person, `next_change_at` (unix ms).
type Loaded = (String, Profile, Option<i64>);

async fn load(
    store: &dyn Store,
    ids: Vec<String>,
    defs: &Defs,
) -> Result<(Vec<Loaded>, HashMap<String, HashMap<String, Value>>), ProfileError> {
    let (records, values) =
        tokio::try_join!(load_records(store, ids.clone(), true), store.values_of(ids))?;
    let mut profiles = Vec::new();
    for r in records {
        let p = Profile::from_record(&r, Some(&defs.roots))
            .map_err(|e| ProfileError::Corrupt(r.id.clone(), e.to_string()))?;
        let was = r.next_change_at.map(|t| t.timestamp_millis());
        profiles.push((r.id, p, was));
    }
    profiles.sort_by(|a, b| a.0.cmp(&b.0));
    Ok((profiles, group_values(values)))
}

/// How a commit of `n` profiles (out of a page) went.
fn outcome(committed: bool, n: usize) -> Step {
    match (committed, n) {
        (false, _) => Step::Lost,
        (true, n) if n >= PAGE as usize => Step::Full,
        (true, _) => Step::Partial,
    }
}

/// Re-evaluates profiles whose next window change is due.
pub async fn sweep(
    store: &dyn Store,
    owner: &str,
    defs: &Defs,
    now: DateTime<Utc>,
) -> Result<Step, ProfileError> {
    let due = store.due_profiles(now, PAGE).await?;
    if due.is_empty() {
        return Ok(Step::Nothing);
    }
    let n = due.len();
    let started = std::time::Instant::now();
    let (profiles, values) = load(store, due, defs).await?;
    let loaded = started.elapsed();
    let empty = HashMap::new();
    let mut commit = ProfileCommit {
        owner: owner.to_owned(),
        now,
        ..ProfileCommit::default()
    };
    for (id, p, was) in &profiles {
        let next = diff(
            defs,
            id,
            p,
            values.get(id).unwrap_or(&empty),
            now,
            &Scope::All,
            &mut commit,
        );
        store_profile(&mut commit, id, p, *was, next);
    }
    let evaluated = started.elapsed();
    let messages = commit.messages.len();
    let committed = store.commit_profiles(commit).await?;
    tracing::debug!(
        profiles = n,
        messages,
        load_ms = loaded.as_millis() as u64,
        evaluate_ms = (evaluated - loaded).as_millis() as u64,
        commit_ms = (started.elapsed() - evaluated).as_millis() as u64,
        "window sweep"
    );
    Ok(outcome(committed, n))
}

/// Advances the oldest job by one page.
pub async fn job(
    store: &dyn Store,
    owner: &str,
    space_id: &str,
    now: DateTime<Utc>,
) -> Result<Step, ProfileError> {
    let Some(job) = store.next_profile_job().await? else {
        return Ok(Step::Nothing);
    };
    // Definitions read after the job: the change that queued it is visible
    // (both were committed together).
    let defs = &Defs::new(store.list_computations().await?, space_id.to_owned());
    let mut commit = ProfileCommit {
        owner: owner.to_owned(),
        now,
        ..ProfileCommit::default()
    };
    let Some(computation) = defs.items.iter().find(|(c, _)| c.id == job.computation_id) else {
        commit.job = Some((job.id, JobProgress::Done));
        return Ok(outcome(store.commit_profiles(commit).await?, 0));
    };
    let ids = store.profile_ids_after(&job.after_profile, PAGE).await?;
    let Some(last) = ids.last().cloned() else {
        commit.job = Some((job.id, JobProgress::Done));
        commit.computed.push(job.computation_id.clone());
        return Ok(outcome(store.commit_profiles(commit).await?, 0));
    };
    let n = ids.len();
    let started = std::time::Instant::now();
    let (profiles, values) = load(store, ids, defs).await?;
    let loaded = started.elapsed();
    let empty = HashMap::new();
    for (id, p, was) in &profiles {
        let stored = values.get(id).unwrap_or(&empty);
        match job_kind(&job) {
            Kind::Recompute => {
                let next = diff(
                    defs,
                    id,
                    p,
                    stored,
                    now,
                    &Scope::Only(&job.computation_id),
                    &mut commit,
                );
                // A new windowed definition may move the next change earlier.
                store_profile(&mut commit, id, p, *was, next);
            }
            Kind::Backfill(destination) => {
                if let Some(v) = stored.get(&job.computation_id) {
                    commit.messages.push(message::identify(
                        space_id,
                        &computation.0,
                        p,
                        v,
                        now,
                        vec![destination.to_owned()],
                    ));
                }
            }
        }
    }
    commit.job = Some((job.id, JobProgress::At(last)));
    let evaluated = started.elapsed();
    let messages = commit.messages.len();
    let committed = store.commit_profiles(commit).await?;
    tracing::debug!(
        profiles = n,
        messages,
        load_ms = loaded.as_millis() as u64,
        evaluate_ms = (evaluated - loaded).as_millis() as u64,
        commit_ms = (started.elapsed() - evaluated).as_millis() as u64,
        "job page"
    );
    // A page of a job is always followed at once by the next.
    Ok(outcome(committed, n.max(PAGE as usize)))
}

enum Kind<'a> {
    Recompute,
    Backfill(&'a str),
}

fn job_kind(job: &ProfileJob) -> Kind<'_> {
    match (job.kind.as_str(), job.destination_id.as_deref()) {
        ("backfill", Some(d)) => Kind::Backfill(d),
        _ => Kind::Recompute,
    }
}
