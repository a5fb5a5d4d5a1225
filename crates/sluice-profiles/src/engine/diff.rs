//! Evaluate a profile and turn differences from the stored values into
//! value changes and messages.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde_json::Value;
use sluice_store::{ProfileCommit, ProfileRecord, ValueChange};

use super::defs::Defs;
use crate::compute::{Evaluation, evaluate};
use crate::definition::AUDIENCE;
use crate::message;
use crate::profile::Profile;

/// What a diff sends: only one computation's changes (a recompute job), or
/// every computation's (events and window sweeps).
pub enum Scope<'a> {
    All,
    Only(&'a str),
}

/// Evaluates every definition for `profile`, compares with `stored`
/// (computation id → JSON) and appends the changes to `commit`. Returns the
/// next window change (unix ms). With `resend`, the profile's userId just
/// changed (first identified, or aliased): values it holds are sent again
/// even when unchanged, since receivers keyed by userId never saw them.
#[allow(clippy::too_many_arguments)]
pub fn diff(
    defs: &Defs,
    profile_id: &str,
    profile: &Profile,
    stored: &HashMap<String, Value>,
    now: DateTime<Utc>,
    scope: &Scope<'_>,
    resend: bool,
    commit: &mut ProfileCommit,
) -> Option<i64> {
    let mut eval = Evaluation::default();
    let now_ms = now.timestamp_millis();
    for (c, d) in &defs.items {
        let new = evaluate(&c.key, d, profile, now_ms, &mut eval);
        if let Scope::Only(id) = scope
            && *id != c.id
        {
            continue;
        }
        let changed = stored.get(&c.id) != new.as_ref();
        let again = resend && new.is_some();
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
        let sent = match (&new, c.class.as_str()) {
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
    eval.next_change
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
            events: Vec::new(),
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
