//! Time-driven work: profiles whose window changes are due, and the
//! preparation of changes that fall due soon.
//!
//! Preparing ahead is what lets a window that closes for many people at
//! once (an audience of everyone who bought during a sale) be sent on time:
//! the evaluations, value changes and messages are made in the minutes
//! before, with deliveries due at the boundary, so at the boundary only the
//! sends remain. See [`sluice_store::ScheduledChange`] for how a prepared
//! change is withdrawn when the person acts first.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sluice_store::{ProfileCommit, Schedule, ScheduledChange, Store};

use super::Lease;
use super::defs::Defs;
use super::diff::{Plan, diff, store_profile};
use super::load::{Values, load_records, values_at};
use super::{Stats, Step};
use crate::error::ProfileError;
use crate::index::Touched;
use crate::profile::Profile;

/// Profiles re-evaluated per sweep or job commit. A page holds its
/// profiles with their events in memory: pages of 2,000 raised the
/// whole-population phases' peak RSS by 8-10 MB over pages of 1,000, for
/// no faster backfill, first sync or expiry (BENCHMARKS.md, "Measured
/// choices").
pub const PAGE: u32 = 1000;

/// Scheduled changes applied per settle.
const SETTLE: u32 = 5000;

/// A loaded profile: id, the person, `next_change_at` (unix ms).
pub(super) type Loaded = (String, Profile, Option<i64>);

/// Profiles with their events, and their values at `now` (see
/// [`values_at`]); the commit settles their scheduled changes.
pub(super) async fn load(
    store: &dyn Store,
    ids: Vec<String>,
    defs: &Defs,
    now: DateTime<Utc>,
    commit: &mut ProfileCommit,
) -> Result<(Vec<Loaded>, Values), ProfileError> {
    let (records, (values, settle)) = tokio::try_join!(
        load_records(store, ids.clone(), true),
        values_at(store, ids, now)
    )?;
    commit.settle = settle;
    let mut profiles = Vec::new();
    for r in records {
        commit.expected.push((r.id.clone(), r.version));
        let p = Profile::from_record(&r, Some(&defs.roots))
            .map_err(|e| ProfileError::Corrupt(r.id.clone(), e.to_string()))?;
        let was = r.next_change_at.map(|t| t.timestamp_millis());
        profiles.push((r.id, p, was));
    }
    profiles.sort_by(|a, b| a.0.cmp(&b.0));
    Ok((profiles, values))
}

/// Evaluates `p` for everything time can change for it (the definitions
/// its own events and traits reach) at `at`: a window sweep's plan.
/// Returns the next window change and how many evaluations it took.
pub(super) fn evaluate_due(
    defs: &Defs,
    id: &str,
    p: &Profile,
    stored: &HashMap<String, serde_json::Value>,
    at: DateTime<Utc>,
    commit: &mut ProfileCommit,
) -> (Option<i64>, usize) {
    let mut touched = Touched {
        all: true,
        ..Touched::default()
    };
    touched.expand(p);
    let list = defs.index.candidates(&touched);
    let plan = Plan {
        evaluate: &list,
        only: None,
        resend: false,
    };
    diff(defs, id, p, stored, at, &plan, commit)
}

/// How a commit of `n` profiles (out of a page) went.
pub(super) fn outcome(committed: bool, n: usize) -> Step {
    match (committed, n) {
        (false, _) => Step::Lost,
        (true, n) if n >= PAGE as usize => Step::Full,
        (true, _) => Step::Partial,
    }
}

/// Commits a page's `commit`, logging (at debug) how long its load
/// (`loaded` after `started`), evaluation and commit took.
pub(super) async fn commit_page(
    store: &dyn Store,
    commit: ProfileCommit,
    what: &'static str,
    profiles: usize,
    started: std::time::Instant,
    loaded: std::time::Duration,
) -> Result<bool, ProfileError> {
    let evaluated = started.elapsed();
    let messages = commit.messages.len();
    let scheduled = commit.scheduled.len();
    let committed = store.commit_profiles(commit).await?;
    tracing::debug!(
        profiles,
        messages,
        scheduled,
        load_ms = loaded.as_millis() as u64,
        evaluate_ms = (evaluated - loaded).as_millis() as u64,
        commit_ms = (started.elapsed() - evaluated).as_millis() as u64,
        "{what}"
    );
    Ok(committed)
}

/// Re-evaluates profiles whose next window change is due.
pub async fn sweep(
    store: &dyn Store,
    lease: &Lease,
    defs: &Defs,
    now: DateTime<Utc>,
    stats: &Stats,
) -> Result<Step, ProfileError> {
    let due = store.due_profiles_in(now, PAGE, lease.share()).await?;
    if due.is_empty() {
        return Ok(Step::Nothing);
    }
    let n = due.len();
    let started = std::time::Instant::now();
    let mut commit = lease.commit(now);
    let (profiles, values) = load(store, due, defs, now, &mut commit).await?;
    let loaded = started.elapsed();
    let empty = HashMap::new();
    for (id, p, was) in &profiles {
        let stored = values.get(id).unwrap_or(&empty);
        let (next, n) = evaluate_due(defs, id, p, stored, now, &mut commit);
        stats.evaluated(n);
        store_profile(&mut commit, id, p, *was, next);
    }
    let committed = commit_page(store, commit, "window sweep", n, started, loaded).await?;
    Ok(outcome(committed, n))
}

/// Applies scheduled changes whose time has come to the stored values.
/// Partition 0's work: its holder settles for every partition.
pub async fn settle(
    store: &dyn Store,
    lease: &Lease,
    now: DateTime<Utc>,
) -> Result<Step, ProfileError> {
    if !lease.first() {
        return Ok(Step::Nothing);
    }
    let started = std::time::Instant::now();
    let settled = store.settle_scheduled(&lease.owner, now, SETTLE).await?;
    if let Some(n) = settled.filter(|n| *n > 0) {
        let ms = started.elapsed().as_millis() as u64;
        tracing::debug!(changes = n, ms, "scheduled changes settled");
    }
    Ok(match settled {
        None => Step::Lost,
        Some(0) => Step::Nothing,
        Some(n) if n >= u64::from(SETTLE) => Step::Full,
        Some(_) => Step::Partial,
    })
}

/// Prepares the changes of profiles due after `now` and by `until`: each is
/// evaluated at its own `next_change_at`; its value changes become
/// scheduled changes and its messages wait for that time.
pub async fn ahead(
    store: &dyn Store,
    lease: &Lease,
    defs: &Defs,
    now: DateTime<Utc>,
    until: DateTime<Utc>,
    stats: &Stats,
) -> Result<Step, ProfileError> {
    if defs.items.is_empty() {
        return Ok(Step::Nothing);
    }
    let due = store.due_ahead_in(now, until, PAGE, lease.share()).await?;
    if due.is_empty() {
        return Ok(Step::Nothing);
    }
    let n = due.len();
    let started = std::time::Instant::now();
    let mut commit = lease.commit(now);
    let when: HashMap<String, DateTime<Utc>> = due.iter().cloned().collect();
    let ids = due.into_iter().map(|(id, _)| id).collect();
    let (profiles, values) = load(store, ids, defs, now, &mut commit).await?;
    let loaded = started.elapsed();
    let empty = HashMap::new();
    for (id, p, was) in &profiles {
        let Some(&at) = when.get(id) else { continue };
        let mut part = ProfileCommit::default();
        let stored = values.get(id).unwrap_or(&empty);
        let (next, n) = evaluate_due(defs, id, p, stored, at, &mut part);
        stats.evaluated(n);
        for v in part.values {
            let Some(computation) = defs.get(&v.computation_id).map(|i| &i.c) else {
                continue;
            };
            let message = part
                .messages
                .iter()
                .find(|m| m.computation_id == v.computation_id)
                .map(|m| m.message_id.clone());
            commit.scheduled.push(Schedule {
                change: ScheduledChange {
                    computation_id: v.computation_id,
                    profile_id: v.profile_id,
                    at,
                    value: v.value,
                },
                message_id: message,
                computation_updated_at: computation.updated_at,
            });
        }
        commit
            .messages
            .extend(part.messages.into_iter().map(|mut m| {
                m.deliver_at = Some(at);
                m
            }));
        store_profile(&mut commit, id, p, *was, next);
    }
    let committed =
        commit_page(store, commit, "window changes prepared", n, started, loaded).await?;
    Ok(outcome(committed, n))
}
