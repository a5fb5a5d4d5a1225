//! One step over new events: identity resolution, profile updates, diffs,
//! and one commit with the advanced cursor.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde_json::Value;
use sluice_store::{
    CursorEvent, EventCursor, LogAdvance, PERSONAS_SOURCE, PRIVACY_SOURCE, ProfileCommit,
    ProfileRecord, Store,
};

use super::compute::Compute;
use super::defs::Defs;
use super::diff::{Plan, diff, next_change, store_profile};
use super::work::{Work, anon, user};
use super::{Lease, Stats};
use crate::error::ProfileError;
use crate::profile::{Call, Profile};

/// The calls of `batch` the engine reads, and the identities they name.
fn parse(batch: &[CursorEvent]) -> (Vec<Call>, Vec<String>) {
    let calls: Vec<Call> = batch
        .iter()
        .filter(|e| {
            !e.elsewhere
                && e.event.source_id != PERSONAS_SOURCE
                && e.event.source_id != PRIVACY_SOURCE
        })
        .filter_map(|e| {
            Call::parse(
                e.event.seq,
                &e.event.source_id,
                &e.event.body,
                e.event.received_at.timestamp_millis(),
            )
        })
        .collect();
    let mut keys = BTreeSet::new();
    for c in &calls {
        for id in [&c.user_id, &c.previous_id].into_iter().flatten() {
            keys.insert(user(id));
        }
        for id in [&c.anonymous_id, &c.previous_id].into_iter().flatten() {
            keys.insert(anon(id));
        }
    }
    (calls, keys.into_iter().collect())
}

/// Loads the stored profiles into a [`Work`] and applies `calls` to it.
fn apply(
    calls: Vec<Call>,
    found: Vec<(String, String)>,
    records: Vec<ProfileRecord>,
    defs: &Defs,
) -> Result<Work, ProfileError> {
    let mut work = Work {
        identities: found.into_iter().collect(),
        with_events: !defs.items.is_empty(),
        roots: defs.roots.clone(),
        ..Work::default()
    };
    for r in records {
        let p = Profile::from_record(&r, Some(&work.roots))
            .map_err(|e| ProfileError::Corrupt(r.id.clone(), e.to_string()))?;
        // Rows stored past the cap while no definition read them go now.
        if r.events.len() > crate::profile::MAX_EVENTS
            && let Some(first) = p.events.first()
        {
            work.trims.insert(r.id.clone(), (first.ts, first.seq));
        }
        work.next_change
            .insert(r.id.clone(), r.next_change_at.map(|t| t.timestamp_millis()));
        work.profiles.insert(r.id, p);
    }
    for call in calls {
        let id = work.resolve(&call);
        work.apply(&id, &call);
        work.touched.insert(id);
    }
    Ok(work)
}

/// Evaluates what changed of the touched profiles and builds the step's
/// commit. `settle`: profiles whose prepared changes the commit withdraws.
/// Returns the commit and how many evaluations it took.
fn build(
    mut work: Work,
    defs: &Defs,
    stored: &HashMap<String, HashMap<String, Value>>,
    settle: &HashSet<String>,
    mut commit: ProfileCommit,
) -> (ProfileCommit, usize) {
    let empty = HashMap::new();
    commit.identities = work.changed_identities;
    commit.removed_profiles = work.removed.into_iter().collect();
    commit.events = work.new_events;
    commit.moved_events = work.moved_events;
    commit.trimmed_events = work
        .trims
        .into_iter()
        .map(|(id, (ts, seq))| (id, ts, seq))
        .collect();
    let now_ms = commit.now.timestamp_millis();
    let mut evaluated = BTreeSet::new();
    let mut evaluations = 0;
    for id in &work.touched {
        let Some(profile) = work.profiles.get(id) else {
            continue;
        };
        let was = work.next_change.get(id).copied().flatten();
        let next = if defs.items.is_empty() {
            None
        } else {
            let mut touched = work.changes.remove(id).unwrap_or_default();
            // A window due (not swept yet) or a prepared change withdrawn:
            // whatever time changes is evaluated now.
            if was.is_some_and(|t| t <= now_ms) || settle.contains(id) {
                touched.all = true;
            }
            touched.expand(profile);
            let list = defs.index.candidates(&touched);
            let plan = Plan {
                evaluate: &list,
                only: None,
                resend: work.identified.contains(id),
            };
            let old = stored.get(id).unwrap_or(&empty);
            let (found, n) = diff(defs, id, profile, old, commit.now, &plan, &mut commit);
            evaluations += n;
            evaluated.extend(list);
            next_change(was, found, touched.all)
        };
        store_profile(&mut commit, id, profile, was, next);
    }
    // `last_computed_at`: the definitions evaluated in this step.
    commit.computed = evaluated
        .into_iter()
        .filter_map(|i| defs.items.get(i as usize).map(|item| item.c.id.clone()))
        .collect();
    (commit, evaluations)
}

/// What a step's commit moves past the calls it read.
pub(super) enum Advance {
    /// The store's event cursor (the database shapes).
    Cursor(EventCursor),
    /// The positions in the event log (the Kafka shape).
    Log(LogAdvance),
}

/// Calls read after the held positions, and what their step moves.
pub(super) struct Batch {
    pub(super) events: Vec<CursorEvent>,
    pub(super) advance: Advance,
}

/// Processes `batch` (already read after the cursor) and commits it with
/// its advance; the CPU work runs on `cpu`, the engine's low-priority
/// thread. Returns false when the lease was lost (nothing was written).
pub(super) async fn step(
    store: &dyn Store,
    cpu: &Compute,
    lease: &Lease,
    defs: &Arc<Defs>,
    Batch {
        events: batch,
        advance,
    }: Batch,
    now: DateTime<Utc>,
    stats: &Stats,
) -> Result<bool, ProfileError> {
    let (calls, keys) = cpu.run(move || parse(&batch)).await?;
    // What each identity the calls name pointed to when read (`None`:
    // absent). Others a merge repoints are covered by the version of the
    // profile they leave.
    let mut before: HashMap<String, Option<String>> =
        keys.iter().map(|k| (k.clone(), None)).collect();
    let found = store.resolve_identities(keys).await?;
    for (identity, profile) in &found {
        before.insert(identity.clone(), Some(profile.clone()));
    }
    let ids: BTreeSet<String> = found.iter().map(|(_, p)| p.clone()).collect();
    let with_events = !defs.items.is_empty();
    let records = super::load::load_records(store, ids.into_iter().collect(), with_events).await?;
    let expected: Vec<(String, i64)> = records.iter().map(|r| (r.id.clone(), r.version)).collect();
    let for_apply = defs.clone();
    let work = cpu
        .run(move || apply(calls, found, records, &for_apply))
        .await??;
    // Without definitions there are no values to compare with (and no
    // scheduled changes: a computation's go with it). A profile this step
    // creates has none stored either: only those read before are asked for.
    let stored_before: HashSet<&str> = expected.iter().map(|(id, _)| id.as_str()).collect();
    let touched: Vec<String> = (work.touched.iter())
        .filter(|id| stored_before.contains(id.as_str()))
        .cloned()
        .collect();
    let (stored, settle) = if defs.items.is_empty() || touched.is_empty() {
        (HashMap::new(), Vec::new())
    } else {
        super::load::values_at(store, touched, now).await?
    };
    let withdrawn: HashSet<String> = settle.iter().cloned().collect();
    let (cursor, log) = match advance {
        Advance::Cursor(cursor) => (Some(cursor), None),
        Advance::Log(log) => (None, Some(log)),
    };
    let commit = ProfileCommit {
        cursor,
        log,
        settle,
        expected,
        ..lease.commit(now)
    };
    let defs = defs.clone();
    let (mut commit, n) = cpu
        .run(move || build(work, &defs, &stored, &withdrawn, commit))
        .await?;
    commit.identities_before = commit
        .identities
        .iter()
        .filter_map(|(identity, _)| {
            let was = before.get(identity)?;
            Some((identity.clone(), was.clone()))
        })
        .collect();
    stats.evaluated(n);
    Ok(store.commit_profiles(commit).await?)
}
