//! Whole-population jobs: the recompute after a definition change and the
//! backfill of a newly connected destination (or of one switched on again,
//! whose first sync it is), one page per commit.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use sluice_store::{Computation, JobProgress, ProfileJob, Store};

use super::defs::Defs;
use super::diff::{Plan, diff, next_change, store_profile};
use super::sweep::{PAGE, commit_page, load, outcome};
use super::{Lease, Stats, Step};
use crate::error::ProfileError;
use crate::message;

/// Advances jobs a page at a time, several in one round while their pages
/// are short: a definition created while few people exist is a job of one
/// short page, and 10,000 of them one per round would queue behind each
/// other for minutes. Stops after [`PAGE`] profiles, [`JOBS_PER_ROUND`]
/// jobs or [`ROUND_TIME`].
pub async fn jobs(
    store: &dyn Store,
    lease: &Lease,
    defs: &Arc<Defs>,
    now: DateTime<Utc>,
    stats: &Stats,
) -> Result<Step, ProfileError> {
    // Partition 0's work: jobs walk every profile, in id order.
    if !lease.first() {
        return Ok(Step::Nothing);
    }
    let started = std::time::Instant::now();
    let mut walked = 0;
    let mut done = Step::Nothing;
    for _ in 0..JOBS_PER_ROUND {
        let (step, n) = job(store, lease, defs, now, stats).await?;
        walked += n;
        done = match (done, step) {
            (_, Step::Lost) => return Ok(Step::Lost),
            (_, Step::Nothing) => return Ok(done),
            (Step::Full, _) | (_, Step::Full) => Step::Full,
            _ => Step::Partial,
        };
        if walked >= PAGE as usize || started.elapsed() >= ROUND_TIME {
            break;
        }
    }
    // The budget ran out, more jobs may wait: go on at once.
    Ok(Step::Full)
}

/// Jobs advanced in one round at most.
const JOBS_PER_ROUND: usize = 64;
/// A round stops taking jobs after this long.
const ROUND_TIME: std::time::Duration = std::time::Duration::from_millis(100);

/// Advances the oldest job by one page; also returns the profiles walked.
async fn job(
    store: &dyn Store,
    lease: &Lease,
    defs: &Arc<Defs>,
    now: DateTime<Utc>,
    stats: &Stats,
) -> Result<(Step, usize), ProfileError> {
    let Some(job) = store.next_profile_job().await? else {
        return Ok((Step::Nothing, 0));
    };
    // The job's definition as the change that queued it left it (both were
    // committed together): when the engine's copy is missing or older, the
    // job reads it, with what it refers to, by itself (the engine's own
    // copy catches up at the next round, before any event).
    let stored = store.get_computation(&job.computation_id).await?;
    let current = defs.get(&job.computation_id).is_some_and(|item| {
        stored
            .as_ref()
            .is_some_and(|c| c.revision == item.c.revision)
    });
    let own;
    let defs: &Defs = match stored.filter(|c| c.deleted_at.is_none()) {
        Some(c) if !current => {
            own = alone(store, c, &defs.space_id).await?;
            &own
        }
        _ => defs.as_ref(),
    };
    let space_id = defs.space_id.as_str();
    let mut commit = lease.commit(now);
    let Some(&position) = defs.by_id.get(&job.computation_id) else {
        commit.job = Some((job.id, JobProgress::Done));
        return Ok((outcome(store.commit_profiles(commit).await?, 0), 0));
    };
    let ids = store.profile_ids_after(&job.after_profile, PAGE).await?;
    let Some(last) = ids.last().cloned() else {
        commit.job = Some((job.id, JobProgress::Done));
        commit.computed.push(job.computation_id.clone());
        return Ok((outcome(store.commit_profiles(commit).await?, 0), 0));
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
        return Ok((Step::Nothing, 0));
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
    Ok((outcome(committed, n.max(PAGE as usize)), n))
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

/// `c` and the definitions it refers to, ordered and indexed.
async fn alone(store: &dyn Store, c: Computation, space_id: &str) -> Result<Defs, ProfileError> {
    let mut all = match crate::Definition::from_stored(&c.class, &c.definition) {
        Ok(d) => crate::refs::closure(store, &d, &c.key).await?,
        Err(_) => Vec::new(),
    };
    all.push(c);
    Ok(Defs::new(all, space_id.to_owned()))
}
