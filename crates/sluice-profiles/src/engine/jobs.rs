//! Whole-population jobs: the recompute after a definition change and the
//! backfill of a newly connected destination (or of one switched on again,
//! whose first sync it is), one page per commit.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use sluice_store::{JobProgress, ProfileCommit, ProfileJob, Store};

use super::defs::Defs;
use super::diff::{Plan, diff, next_change, store_profile};
use super::sweep::{PAGE, commit_page, load, outcome};
use super::{Stats, Step};
use crate::error::ProfileError;
use crate::message;

/// Advances the oldest job by one page.
pub async fn job(
    store: &dyn Store,
    owner: &str,
    defs: &mut Arc<Defs>,
    now: DateTime<Utc>,
    stats: &Stats,
) -> Result<Step, ProfileError> {
    let Some(job) = store.next_profile_job().await? else {
        return Ok(Step::Nothing);
    };
    // Definitions brought up to date after the job is read: the change
    // that queued it is visible (both were committed together).
    if let Some(fresh) = defs.refreshed(store).await? {
        *defs = Arc::new(fresh);
    }
    let defs = defs.as_ref();
    let space_id = defs.space_id.as_str();
    let mut commit = ProfileCommit {
        owner: owner.to_owned(),
        now,
        ..ProfileCommit::default()
    };
    let Some(&position) = defs.by_id.get(&job.computation_id) else {
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
    let (profiles, values) = load(store, ids, defs, now, &mut commit).await?;
    if let Kind::Backfill(_) = job_kind(&job) {
        // A backfill sends stored values and leaves prepared changes (of
        // other computations: connecting cancelled this one's) alone.
        commit.settle.clear();
    }
    let loaded = started.elapsed();
    let empty = HashMap::new();
    let Some(computation) = defs.items.get(position as usize) else {
        return Ok(Step::Nothing);
    };
    // The job's definition and those it refers to: no other value changes.
    let list = defs.index.with_upstream(position);
    let plan = Plan {
        evaluate: &list,
        only: Some(&job.computation_id),
        resend: false,
    };
    for (id, p, was) in &profiles {
        let stored = values.get(id).unwrap_or(&empty);
        match job_kind(&job) {
            Kind::Recompute => {
                let (found, n) = diff(defs, id, p, stored, now, &plan, &mut commit);
                stats.evaluated(n);
                // A new windowed definition may move the next change earlier.
                let next = next_change(*was, found, false);
                store_profile(&mut commit, id, p, *was, next);
            }
            Kind::Backfill(destination) => {
                if let Some(v) = stored.get(&job.computation_id) {
                    commit.messages.push(message::identify(
                        space_id,
                        &computation.c,
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
    let committed = commit_page(store, commit, "job page", n, started, loaded).await?;
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
