//! Evaluate a profile and turn differences from the stored values into
//! value changes and messages.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde_json::Value;
use sluice_store::{Computation, ProfileCommit, ProfileRecord, ValueChange};

use super::defs::Defs;
use crate::compute::{Evaluation, evaluate};
use crate::definition::AUDIENCE;
use crate::message;
use crate::profile::Profile;

/// Which definitions a diff evaluates, and which of them it sends.
pub struct Plan<'a> {
    /// Positions in [`Defs::items`], in evaluation order (see
    /// [`crate::index::Index::candidates`]).
    pub evaluate: &'a [u32],
    /// Only this computation's changes (a recompute job); `None`: every
    /// evaluated one's.
    pub only: Option<&'a str>,
    /// The profile's userId just changed (first identified, or aliased):
    /// values it holds are sent again even when unchanged, since receivers
    /// keyed by userId never saw them.
    pub resend: bool,
}

/// Evaluates the planned definitions for `profile`, compares with `stored`
/// (computation id → JSON) and appends the changes to `commit`. Returns the
/// earliest window change among them (unix ms) and how many it evaluated.
pub fn diff(
    defs: &Defs,
    profile_id: &str,
    profile: &Profile,
    stored: &HashMap<String, Value>,
    now: DateTime<Utc>,
    plan: &Plan<'_>,
    commit: &mut ProfileCommit,
) -> (Option<i64>, usize) {
    let mut eval = Evaluation::default();
    let now_ms = now.timestamp_millis();
    for &i in plan.evaluate {
        let Some(item) = defs.items.get(i as usize) else {
            continue;
        };
        let c = &item.c;
        let new = evaluate(&c.key, &item.d, profile, now_ms, &mut eval);
        if plan.only.is_some_and(|id| id != c.id) {
            continue;
        }
        let changed = stored.get(&c.id) != new.as_ref();
        let again = plan.resend && new.is_some();
        if !changed && !again {
            continue;
        }
        if changed {
            commit.values.push(ValueChange {
                computation_id: c.id.clone(),
                profile_id: profile_id.to_owned(),
                value: new.as_ref().map(Value::to_string),
            });
        }
        send(defs, c, profile, new.as_ref(), now, commit);
    }
    if plan.resend && plan.only.is_none() {
        // Values of definitions nothing reached are unchanged: sent again
        // as stored.
        for (id, value) in stored {
            let Some(&i) = defs.by_id.get(id) else {
                continue;
            };
            if plan.evaluate.binary_search(&i).is_err()
                && let Some(item) = defs.items.get(i as usize)
            {
                send(defs, &item.c, profile, Some(value), now, commit);
            }
        }
    }
    (eval.next_change, plan.evaluate.len())
}

/// Queues the identify message of `c`'s value `new` (`None`: no value).
fn send(
    defs: &Defs,
    c: &Computation,
    profile: &Profile,
    new: Option<&Value>,
    now: DateTime<Utc>,
    commit: &mut ProfileCommit,
) {
    let sent = match (new, c.class.as_str()) {
        (Some(v), _) => v.clone(),
        (None, AUDIENCE) => Value::Bool(false),
        (None, _) => Value::Null,
    };
    if !c.destination_ids.is_empty() {
        commit.messages.push(message::identify(
            &defs.space_id,
            c,
            profile,
            &sent,
            now,
            c.destination_ids.clone(),
        ));
    }
}

/// The next window change to store after evaluating a part of the
/// definitions: the earlier of the stored one (`was`, for the definitions
/// not evaluated) and the evaluated ones' (`found`). With `exact`, every
/// definition that can change by time was evaluated: `found` alone.
pub fn next_change(was: Option<i64>, found: Option<i64>, exact: bool) -> Option<i64> {
    if exact {
        return found;
    }
    match (was, found) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Writes what changed of a profile: the whole document when it is new or
/// its identities or traits changed, else only `next_change_at` when it
/// moved from `was`, else nothing.
pub fn store_profile(
    commit: &mut ProfileCommit,
    id: &str,
    profile: &Profile,
    was: Option<i64>,
    next_change: Option<i64>,
) {
    let at = next_change.and_then(DateTime::<Utc>::from_timestamp_millis);
    if profile.dirty {
        commit.profiles.push(ProfileRecord {
            id: id.to_owned(),
            doc: profile.doc(),
            next_change_at: at,
            ..ProfileRecord::default()
        });
    } else if was != next_change {
        commit.next_changes.push((id.to_owned(), at));
    }
}

/// Stored values grouped by profile id.
pub fn group_values(
    values: Vec<sluice_store::ComputedValue>,
) -> HashMap<String, HashMap<String, Value>> {
    let mut out: HashMap<String, HashMap<String, Value>> = HashMap::new();
    for v in values {
        let parsed = serde_json::from_str(&v.value).unwrap_or(Value::Null);
        out.entry(v.profile_id)
            .or_default()
            .insert(v.computation_id, parsed);
    }
    out
}
