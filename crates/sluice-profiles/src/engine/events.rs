//! One step over new events: identity resolution, profile updates, diffs,
//! and one commit with the advanced cursor.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde_json::Value;
use sluice_store::{
    CursorEvent, EventCursor, PERSONAS_SOURCE, PRIVACY_SOURCE, ProfileCommit, ProfileEventRow,
    ProfileRecord, Store,
};

use super::compute::Compute;
use super::defs::Defs;
use super::diff::{Scope, diff, store_profile};
use crate::error::ProfileError;
use crate::profile::{Call, Profile, ProfileEvent};

/// Profiles touched by one batch, in memory until the commit.
#[derive(Default)]
struct Work {
    profiles: HashMap<String, Profile>,
    /// `next_change_at` as loaded (unix ms), to write it only when it moves.
    next_change: HashMap<String, Option<i64>>,
    identities: HashMap<String, String>,
    changed_identities: Vec<(String, String)>,
    touched: BTreeSet<String>,
    removed: BTreeSet<String>,
    /// Whether profiles carry their events (some definition reads them),
    /// and the properties those keep.
    with_events: bool,
    roots: BTreeSet<String>,
    /// Rows to append, under the profile the call resolved to then (a
    /// later merge in the batch moves them with the rest).
    new_events: Vec<(String, ProfileEventRow)>,
    moved_events: Vec<(String, String)>,
    /// Per profile, the cap's latest position.
    trims: HashMap<String, (i64, i64)>,
    /// Profiles whose messages' userId changed in this batch.
    identified: HashSet<String>,
}

fn user(id: &str) -> String {
    format!("user:{id}")
}

fn anon(id: &str) -> String {
    format!("anon:{id}")
}

impl Work {
    fn find(&self, identity: &str) -> Option<String> {
        self.identities.get(identity).cloned()
    }

    fn point(&mut self, identity: String, profile: &str) {
        if self.identities.get(&identity).map(String::as_str) != Some(profile) {
            self.identities.insert(identity.clone(), profile.to_owned());
            self.changed_identities.push((identity, profile.to_owned()));
        }
    }

    fn create(&mut self) -> String {
        // 16 alphanumerics (95 random bits), like every other Sluice id: the
        // id is a key in each of the person's event rows, and a UUID's 32
        // hex digits cost 16 bytes more per row (BENCHMARKS.md, "Measured
        // choices").
        let id = sluice_store::keys::new_id("prf");
        let fresh = Profile {
            dirty: true,
            ..Profile::default()
        };
        self.profiles.insert(id.clone(), fresh);
        id
    }

    /// Moves `from` into `into`, repointing its identities and events.
    fn merge(&mut self, into: &str, from: &str) {
        let Some(other) = self.profiles.remove(from) else {
            return;
        };
        for u in &other.user_ids {
            self.point(user(u), into);
        }
        for a in &other.anonymous_ids {
            self.point(anon(a), into);
        }
        if let Some(p) = self.profiles.get_mut(into) {
            let before = p.user_id().map(str::to_owned);
            if let Some(cut) = p.absorb(other) {
                self.trims.insert(into.to_owned(), cut);
            }
            if p.user_id() != before.as_deref() {
                self.identified.insert(into.to_owned());
            }
        }
        self.moved_events.push((from.to_owned(), into.to_owned()));
        self.trims.remove(from);
        self.removed.insert(from.to_owned());
        self.touched.remove(from);
    }

    /// Applies a call to its profile: traits to the document, behaviour as
    /// a new row (and to the loaded events).
    fn apply(&mut self, id: &str, call: &Call) {
        let Some(p) = self.profiles.get_mut(id) else {
            return;
        };
        p.apply_traits(call);
        // Behaviour names its source in its own row; the document keeps the
        // sources of the other calls (identify, group, alias), which leave
        // no row: together they tell a deletion where the person's calls
        // went, at no cost per behavioural call.
        let Some(row) = call.event_row() else {
            p.add_source(&call.source_id);
            return;
        };
        // A call sent twice counts once (Segment deduplicates by messageId).
        if row.message_hash.is_some_and(|m| p.has_message(m)) {
            return;
        }
        if self.with_events
            && let Some(cut) = p.push_event(ProfileEvent::from_row_keeping(&row, Some(&self.roots)))
        {
            self.trims.insert(id.to_owned(), cut);
        }
        self.new_events.push((id.to_owned(), row));
    }

    fn attach_user(&mut self, profile: &str, id: &str) {
        self.point(user(id), profile);
        if let Some(p) = self.profiles.get_mut(profile) {
            let before = p.user_id().map(str::to_owned);
            p.add_user_id(id);
            if p.user_id() != before.as_deref() {
                self.identified.insert(profile.to_owned());
            }
        }
    }

    fn attach_anon(&mut self, profile: &str, id: &str) {
        self.point(anon(id), profile);
        if let Some(p) = self.profiles.get_mut(profile) {
            p.add_anonymous_id(id);
        }
    }

    /// The profile a call belongs to, merging as the rules say (see
    /// `docs/personas.md`, "Identity resolution").
    fn resolve(&mut self, call: &Call) -> String {
        if call.kind == "alias"
            && let (Some(u), Some(prev)) = (&call.user_id, &call.previous_id)
        {
            let target = self.find(&user(u));
            let previous = self.find(&user(prev)).or_else(|| self.find(&anon(prev)));
            let id = match (target, previous) {
                (Some(t), Some(p)) if t != p => {
                    self.merge(&t, &p);
                    t
                }
                (Some(t), _) => t,
                (None, Some(p)) => p,
                (None, None) => self.create(),
            };
            self.attach_user(&id, u);
            if self.find(&user(prev)).is_none() {
                self.attach_anon(&id, prev);
            }
            return id;
        }
        let by_user = call.user_id.as_deref().and_then(|u| self.find(&user(u)));
        let by_anon = call
            .anonymous_id
            .as_deref()
            .and_then(|a| self.find(&anon(a)));
        let id = match (by_user, by_anon) {
            (Some(u), Some(a)) if u != a => {
                let mergeable = match (self.profiles.get(&u), self.profiles.get(&a)) {
                    (Some(pu), Some(pa)) => pu.can_merge(pa),
                    _ => false,
                };
                if mergeable {
                    self.merge(&u, &a);
                }
                u
            }
            (Some(u), _) => u,
            (None, Some(a)) => {
                // A userId on an anonymous profile claims it, unless that
                // profile already belongs to another userId.
                let taken = self
                    .profiles
                    .get(&a)
                    .is_some_and(|p| !p.user_ids.is_empty());
                if taken && call.user_id.is_some() {
                    self.create()
                } else {
                    a
                }
            }
            (None, None) => self.create(),
        };
        if let Some(u) = &call.user_id {
            self.attach_user(&id, u);
        }
        if let Some(a) = &call.anonymous_id
            && self.find(&anon(a)).is_none()
        {
            self.attach_anon(&id, a);
        }
        id
    }
}

/// The calls of `batch` the engine reads, and the identities they name.
fn parse(batch: &[CursorEvent]) -> (Vec<Call>, Vec<String>) {
    let calls: Vec<Call> = batch
        .iter()
        .filter(|e| e.event.source_id != PERSONAS_SOURCE && e.event.source_id != PRIVACY_SOURCE)
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

/// Evaluates the touched profiles and builds the step's commit.
fn build(
    work: Work,
    defs: &Defs,
    stored: &HashMap<String, HashMap<String, Value>>,
    mut commit: ProfileCommit,
) -> ProfileCommit {
    let empty = HashMap::new();
    commit.identities = work.changed_identities;
    commit.removed_profiles = work.removed.into_iter().collect();
    commit.computed = defs.items.iter().map(|(c, _)| c.id.clone()).collect();
    commit.events = work.new_events;
    commit.moved_events = work.moved_events;
    commit.trimmed_events = work
        .trims
        .into_iter()
        .map(|(id, (ts, seq))| (id, ts, seq))
        .collect();
    for id in &work.touched {
        let Some(profile) = work.profiles.get(id) else {
            continue;
        };
        let next = if defs.items.is_empty() {
            None
        } else {
            let old = stored.get(id).unwrap_or(&empty);
            let resend = work.identified.contains(id);
            diff(
                defs,
                id,
                profile,
                old,
                commit.now,
                &Scope::All,
                resend,
                &mut commit,
            )
        };
        let was = work.next_change.get(id).copied().flatten();
        store_profile(&mut commit, id, profile, was, next);
    }
    commit
}

/// Processes `batch` (already read after the cursor) and commits it; the
/// CPU work runs on `cpu`, the engine's low-priority thread.
/// Returns the new cursor, or `None` when the lease was lost.
pub async fn step(
    store: &dyn Store,
    cpu: &Compute,
    owner: &str,
    defs: &Arc<Defs>,
    batch: Vec<CursorEvent>,
    now: DateTime<Utc>,
) -> Result<Option<EventCursor>, ProfileError> {
    let Some(last) = batch.last().map(|e| e.cursor) else {
        return Ok(None);
    };
    let (calls, keys) = cpu.run(move || parse(&batch)).await?;
    let found = store.resolve_identities(keys).await?;
    let ids: BTreeSet<String> = found.iter().map(|(_, p)| p.clone()).collect();
    let with_events = !defs.items.is_empty();
    let records = super::load::load_records(store, ids.into_iter().collect(), with_events).await?;
    let for_apply = defs.clone();
    let work = cpu
        .run(move || apply(calls, found, records, &for_apply))
        .await??;
    // Without definitions there are no values to compare with (and no
    // scheduled changes: a computation's go with it).
    let (stored, settle) = if defs.items.is_empty() {
        (HashMap::new(), Vec::new())
    } else {
        let touched: Vec<String> = work.touched.iter().cloned().collect();
        super::load::values_at(store, touched, now).await?
    };
    let commit = ProfileCommit {
        owner: owner.to_owned(),
        now,
        cursor: Some(last),
        settle,
        ..ProfileCommit::default()
    };
    let defs = defs.clone();
    let commit = cpu.run(move || build(work, &defs, &stored, commit)).await?;
    Ok(store.commit_profiles(commit).await?.then_some(last))
}
