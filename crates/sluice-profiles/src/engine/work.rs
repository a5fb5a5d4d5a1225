//! A batch's profiles in memory: identity resolution (the rules of
//! `docs/personas.md`, "Identity resolution"), the calls applied, and what
//! changed per person.

use std::collections::{BTreeSet, HashMap, HashSet};

use sluice_store::ProfileEventRow;

use crate::index::Touched;
use crate::profile::{Call, Profile, ProfileEvent};

/// Profiles touched by one batch, in memory until the commit.
#[derive(Default)]
pub(super) struct Work {
    pub(super) profiles: HashMap<String, Profile>,
    /// `next_change_at` as loaded (unix ms), to write it only when it moves.
    pub(super) next_change: HashMap<String, Option<i64>>,
    pub(super) identities: HashMap<String, String>,
    pub(super) changed_identities: Vec<(String, String)>,
    pub(super) touched: BTreeSet<String>,
    pub(super) removed: BTreeSet<String>,
    /// Whether profiles carry their events (some definition reads them),
    /// and the properties those keep.
    pub(super) with_events: bool,
    pub(super) roots: BTreeSet<String>,
    /// Rows to append, under the profile the call resolved to then (a
    /// later merge in the batch moves them with the rest).
    pub(super) new_events: Vec<(String, ProfileEventRow)>,
    pub(super) moved_events: Vec<(String, String)>,
    /// Per profile, the cap's latest position.
    pub(super) trims: HashMap<String, (i64, i64)>,
    /// Profiles whose messages' userId changed in this batch.
    pub(super) identified: HashSet<String>,
    /// What changed per profile: which definitions to evaluate.
    pub(super) changes: HashMap<String, Touched>,
}

pub(super) fn user(id: &str) -> String {
    format!("user:{id}")
}

pub(super) fn anon(id: &str) -> String {
    format!("anon:{id}")
}

impl Work {
    fn touch(&mut self, id: &str) -> &mut Touched {
        self.changes.entry(id.to_owned()).or_default()
    }

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
        // 16 alphanumerics, as long as every other Sluice id: the id is a
        // key in each of the person's event rows, and a UUID's 32 hex
        // digits cost 16 bytes more per row (BENCHMARKS.md, "Measured
        // choices"). Time first, see [`profile_id`].
        let id = profile_id(chrono::Utc::now().timestamp_millis());
        let fresh = Profile {
            dirty: true,
            ..Profile::default()
        };
        self.profiles.insert(id.clone(), fresh);
        self.changes.insert(id.clone(), Touched::everything());
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
        let mut dropped = Vec::new();
        if let Some(p) = self.profiles.get_mut(into) {
            let before = p.user_id().map(str::to_owned);
            if let Some(cut) = p.absorb(other) {
                self.trims.insert(into.to_owned(), cut);
            }
            dropped = std::mem::take(&mut p.dropped);
            if p.user_id() != before.as_deref() {
                self.identified.insert(into.to_owned());
            }
        }
        // The survivor holds the other's events and traits now.
        let theirs = self.changes.remove(from).unwrap_or_default();
        let identified = self.identified.contains(into);
        let mine = self.touch(into);
        mine.merge(theirs);
        mine.events.extend(dropped);
        mine.all = true;
        mine.vacuous |= identified;
        self.moved_events.push((from.to_owned(), into.to_owned()));
        self.trims.remove(from);
        self.removed.insert(from.to_owned());
        self.touched.remove(from);
    }

    /// Applies a call to its profile: traits to the document, behaviour as
    /// a new row (and to the loaded events).
    pub(super) fn apply(&mut self, id: &str, call: &Call) {
        let Some(p) = self.profiles.get_mut(id) else {
            return;
        };
        p.apply_traits(call);
        let traits: Vec<String> = if call.kind == "identify" {
            call.traits.keys().cloned().collect()
        } else {
            Vec::new()
        };
        // Behaviour names its source in its own row; the document keeps the
        // sources of the other calls (identify, group, alias), which leave
        // no row: together they tell a deletion where the person's calls
        // went, at no cost per behavioural call.
        let Some(row) = call.event_row() else {
            p.add_source(&call.source_id);
            self.touch(id).traits.extend(traits);
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
        let dropped = std::mem::take(&mut p.dropped);
        let touched = self.touch(id);
        touched.events.insert((row.kind.clone(), row.name.clone()));
        touched.events.extend(dropped);
        self.new_events.push((id.to_owned(), row));
    }

    fn attach_user(&mut self, profile: &str, id: &str) {
        self.point(user(id), profile);
        if let Some(p) = self.profiles.get_mut(profile) {
            let before = p.user_id().map(str::to_owned);
            p.add_user_id(id);
            if p.user_id() != before.as_deref() {
                self.identified.insert(profile.to_owned());
                // Audiences of identified people only may now hold.
                let t = self.touch(profile);
                t.all = true;
                t.vacuous = true;
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
    pub(super) fn resolve(&mut self, call: &Call) -> String {
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

/// A new profile id: `prf_`, the creation time in 8 base-62 digits (unix
/// ms, sorting as text in time order until the year 8888), then 8 random
/// alphanumerics (47 bits; ids drawn in one millisecond collide about once
/// in 10^14 pairs). New people's rows then land at the end of every
/// per-computation range of `computed_values` and beside each other in
/// `profile_events`, instead of at random pages: with many definitions a
/// new person's values cost a few pages per step, not one page each
/// (BENCHMARKS.md, "Personas at scale").
pub(super) fn profile_id(now_ms: i64) -> String {
    const DIGITS: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut t = u64::try_from(now_ms).unwrap_or(0);
    let mut time = [b'0'; 8];
    for d in time.iter_mut().rev() {
        *d = DIGITS[(t % 62) as usize];
        t /= 62;
    }
    let random = sluice_store::keys::new_id("x");
    let tail = random.get(2..10).unwrap_or("00000000");
    format!("prf_{}{tail}", String::from_utf8_lossy(&time))
}

#[cfg(test)]
mod tests {
    #[test]
    fn profile_ids_sort_by_creation_time_and_differ_within_a_millisecond() {
        let a = super::profile_id(1_700_000_000_000);
        let b = super::profile_id(1_700_000_000_001);
        let c = super::profile_id(1_800_000_000_000);
        assert!(a < b && b < c, "{a} {b} {c}");
        assert_eq!(a.len(), "prf_".len() + 16);
        assert_ne!(a, super::profile_id(1_700_000_000_000));
    }
}
