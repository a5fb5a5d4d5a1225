//! Evaluation of definitions over one profile at one time (pure).
//!
//! Every evaluation also reports when its result can next change by time
//! alone (an event leaving a window), so the engine can wake the profile
//! then without a new event.

use std::collections::HashMap;

use serde_json::{Number, Value};

use crate::definition::{
    AudienceDefinition, Condition, Definition, Performed, TraitDefinition, TraitKind, Window,
};
use crate::filter::{Filter, compare, lookup, same};
use crate::profile::{Profile, ProfileEvent};

/// Values in a unique list; the count still counts every distinct value.
pub const MAX_UNIQUE_LIST: usize = 100;

/// The running result of evaluating a profile: values by key and the
/// earliest time (ms) a windowed result can change.
#[derive(Debug, Default)]
pub struct Evaluation {
    pub by_key: HashMap<String, Value>,
    pub next_change: Option<i64>,
}

impl Evaluation {
    fn wake_at(&mut self, t: i64) {
        self.next_change = Some(self.next_change.map_or(t, |n| n.min(t)));
    }
}

/// Which events a definition looks at.
struct Pattern<'b> {
    kind: &'b str,
    name: Option<&'b str>,
    filters: &'b [Filter],
    window: Option<&'b Window>,
    sources: &'b [String],
}

/// The events matching `pattern` (and within its window when there is one),
/// plus whether any matching event exists at all. With `eval`, records the
/// first window exit there (a trait's value can change at every exit).
fn select<'a>(
    profile: &'a Profile,
    pattern: &Pattern<'_>,
    now: i64,
    mut eval: Option<&mut Evaluation>,
) -> (Vec<&'a ProfileEvent>, bool) {
    let Pattern {
        kind,
        name,
        filters,
        window,
        sources,
    } = *pattern;
    let mut ever = false;
    let since = window.map(|w| now - w.millis());
    let mut out = Vec::new();
    for e in &profile.events {
        if e.kind != kind
            || name.is_some_and(|n| e.name.as_deref() != Some(n))
            || (!sources.is_empty() && !sources.contains(&e.source_id))
            || !filters.iter().all(|f| f.matches(&e.properties))
        {
            continue;
        }
        ever = true;
        match (since, window) {
            (Some(since), Some(_)) if e.ts <= since => {}
            (Some(_), Some(w)) => {
                if let Some(eval) = eval.as_deref_mut() {
                    eval.wake_at(e.ts + w.millis());
                }
                out.push(e);
            }
            _ => out.push(e),
        }
    }
    (out, ever)
}

fn number(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        #[allow(clippy::cast_possible_truncation)]
        return Value::from(x as i64);
    }
    Number::from_f64(x).map_or(Value::Null, Value::Number)
}

/// A computed trait's value; `None` = no value.
pub fn trait_value(
    def: &TraitDefinition,
    profile: &Profile,
    now: i64,
    eval: &mut Evaluation,
) -> Option<Value> {
    let pattern = Pattern {
        kind: "track",
        name: Some(&def.event),
        filters: &def.filters,
        window: def.window.as_ref(),
        sources: &def.source_ids,
    };
    let (events, ever) = select(profile, &pattern, now, Some(eval));
    let prop = def.property.as_deref().unwrap_or("");
    let values = || {
        events
            .iter()
            .filter_map(|e| lookup(&e.properties, prop).filter(|v| !v.is_null()))
    };
    match def.kind {
        TraitKind::Counter => ever.then(|| Value::from(events.len())),
        TraitKind::Sum | TraitKind::Avg | TraitKind::Min | TraitKind::Max => {
            let nums: Vec<f64> = values().filter_map(Value::as_f64).collect();
            if nums.is_empty() {
                return None;
            }
            let v = match def.kind {
                TraitKind::Sum => nums.iter().sum(),
                TraitKind::Avg => nums.iter().sum::<f64>() / nums.len() as f64,
                TraitKind::Min => nums.iter().copied().fold(f64::INFINITY, f64::min),
                _ => nums.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            };
            Some(number(v))
        }
        TraitKind::MostFrequent => {
            // Count per value; ties go to the value seen most recently.
            let mut counts: Vec<(Value, usize, usize)> = Vec::new();
            for (i, v) in values().enumerate() {
                match counts.iter_mut().find(|(x, _, _)| same(x, v)) {
                    Some(entry) => {
                        entry.1 += 1;
                        entry.2 = i;
                    }
                    None => counts.push((v.clone(), 1, i)),
                }
            }
            counts
                .into_iter()
                .max_by_key(|(_, n, last)| (*n, *last))
                .map(|(v, _, _)| v)
        }
        TraitKind::First => values().next().cloned(),
        TraitKind::Last => values().next_back().cloned(),
        TraitKind::UniqueList | TraitKind::UniqueCount => {
            let mut seen: Vec<&Value> = Vec::new();
            for v in values() {
                if !seen.iter().any(|s| same(s, v)) {
                    seen.push(v);
                }
            }
            if seen.is_empty() {
                return None;
            }
            if def.kind == TraitKind::UniqueCount {
                return Some(Value::from(seen.len()));
            }
            Some(Value::Array(
                seen.into_iter().take(MAX_UNIQUE_LIST).cloned().collect(),
            ))
        }
    }
}

/// Whether the count of `p`'s events admits `admits`, recording in `eval`
/// when that answer next changes by time alone. Without new events the
/// count only falls, one window exit at a time, so the answer changes at
/// the first exit after which `admits` says otherwise: for "at least 3"
/// with 5 events, the third exit, not the first (a profile is not woken
/// for exits that change nothing).
fn performed(
    p: &Performed,
    def: &AudienceDefinition,
    profile: &Profile,
    now: i64,
    eval: &mut Evaluation,
    admits: impl Fn(u64) -> bool,
) -> bool {
    let pattern = Pattern {
        kind: &p.kind,
        name: p.event.as_deref(),
        filters: &p.filters,
        window: p.window.as_ref(),
        sources: &def.source_ids,
    };
    let (events, _) = select(profile, &pattern, now, None);
    let n = u64::try_from(events.len()).unwrap_or(u64::MAX);
    let answer = admits(n);
    if let Some(w) = p.window.as_ref() {
        let mut exits: Vec<i64> = events.iter().map(|e| e.ts + w.millis()).collect();
        exits.sort_unstable();
        let changes = (1..=n).find(|&k| admits(n - k) != answer);
        if let Some(&t) = changes
            .and_then(|k| usize::try_from(k - 1).ok())
            .and_then(|k| exits.get(k))
        {
            eval.wake_at(t);
        }
    }
    answer
}

fn holds(
    c: &Condition,
    def: &AudienceDefinition,
    profile: &Profile,
    now: i64,
    eval: &mut Evaluation,
) -> bool {
    match c {
        Condition::And(items) => {
            let mut all = true;
            // Evaluate every branch so each window reports its next change.
            for i in items {
                all &= holds(i, def, profile, now, eval);
            }
            all
        }
        Condition::Or(items) => {
            let mut any = false;
            for i in items {
                any |= holds(i, def, profile, now, eval);
            }
            any
        }
        Condition::Not(inner) => !holds(inner, def, profile, now, eval),
        Condition::Performed(p) => {
            let count = p.count.clone().unwrap_or_default();
            performed(p, def, profile, now, eval, |n| count.admits(n))
        }
        Condition::NotPerformed(p) => performed(p, def, profile, now, eval, |n| n == 0),
        Condition::Trait(cmp) => compare(profile.traits.get(&cmp.key), cmp.op, cmp.value.as_ref()),
        Condition::ComputedTrait(cmp) => {
            compare(eval.by_key.get(&cmp.key), cmp.op, cmp.value.as_ref())
        }
        Condition::Audience(key) => eval.by_key.get(key) == Some(&Value::Bool(true)),
    }
}

/// Whether the profile is a member; `None` = not a member.
pub fn audience_value(
    def: &AudienceDefinition,
    profile: &Profile,
    now: i64,
    eval: &mut Evaluation,
) -> Option<Value> {
    let member = holds(&def.condition, def, profile, now, eval)
        && (def.include_anonymous || !profile.user_ids.is_empty());
    member.then_some(Value::Bool(true))
}

/// Evaluates one definition, recording its value under `key` for the
/// definitions evaluated after it.
pub fn evaluate(
    key: &str,
    def: &Definition,
    profile: &Profile,
    now: i64,
    eval: &mut Evaluation,
) -> Option<Value> {
    let value = match def {
        Definition::Trait(t) => trait_value(t, profile, now, eval),
        Definition::Audience(a) => audience_value(a, profile, now, eval),
    };
    match &value {
        Some(v) => eval.by_key.insert(key.to_owned(), v.clone()),
        None => eval.by_key.remove(key),
    };
    value
}

#[cfg(test)]
#[path = "compute_tests.rs"]
mod tests;
