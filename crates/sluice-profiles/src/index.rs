//! Which definitions a change to a person can affect (pure).
//!
//! A definition's value for a person depends only on what it reads: the
//! person's events of the types and names it names, the identify traits it
//! compares, the values of the computed traits and audiences it refers to,
//! whether the person has a userId, and the time. So when one person
//! changes, only the definitions reading what changed (and those referring
//! to them) can change value; every other definition keeps the value it
//! has, and is not evaluated. The engine's cost per event follows the
//! definitions that event can reach, not all of them.
//!
//! - **Events** reach the definitions naming their `(type, name)`, and those
//!   naming their type with no name (`performed` a page, any page).
//! - **Identify traits** reach the definitions comparing that trait key.
//! - **References** carry a change on: a definition reached brings the
//!   audiences referring to its key (dependents), and every definition
//!   evaluated brings the ones it refers to (their fresh values are its
//!   inputs).
//! - **A new or newly identified person** can hold values of definitions
//!   reading nothing they have: `not performed "Refund"` holds for everyone
//!   without a refund. Those definitions (the ones with a value on a person
//!   with no events and no traits, found once per set of definitions) are
//!   evaluated for them too, with everything the person's own events and
//!   traits reach.
//! - **Time** changes only windowed counts over the person's own events, so
//!   a person whose window is due is evaluated for everything their events
//!   and traits reach.

use std::collections::{BTreeSet, HashMap};

use crate::compute::{Evaluation, evaluate};
use crate::definition::{Condition, Definition, Performed};
use crate::profile::Profile;

/// An event's type and name (`None`: an event without a name, or, in a
/// definition, any name).
pub type EventKey = (String, Option<String>);

/// What changed for one person in one evaluation, and so which definitions
/// to evaluate.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Touched {
    /// Events added or dropped.
    pub events: BTreeSet<EventKey>,
    /// Identify trait keys set.
    pub traits: BTreeSet<String>,
    /// Everything the person's events and traits reach (a merge, a due
    /// window, a withdrawn prepared change).
    pub all: bool,
    /// Also the definitions that hold for a person with nothing (a new or
    /// newly identified person).
    pub vacuous: bool,
}

impl Touched {
    /// Everything the person's events and traits reach, and the
    /// definitions that hold for a person with nothing.
    pub fn everything() -> Touched {
        Touched {
            all: true,
            vacuous: true,
            ..Touched::default()
        }
    }

    pub fn merge(&mut self, other: Touched) {
        self.events.extend(other.events);
        self.traits.extend(other.traits);
        self.all |= other.all;
        self.vacuous |= other.vacuous;
    }

    /// With `all`, adds every key of `profile`'s events and traits.
    pub fn expand(&mut self, profile: &Profile) {
        if !self.all {
            return;
        }
        for e in &profile.events {
            if !self.events.contains(&(e.kind.clone(), e.name.clone())) {
                self.events.insert((e.kind.clone(), e.name.clone()));
            }
        }
        self.traits.extend(profile.traits.keys().cloned());
    }
}

/// Definitions (positions in evaluation order) by what they read.
#[derive(Debug, Default)]
pub struct Index {
    by_event: HashMap<EventKey, Vec<u32>>,
    by_trait: HashMap<String, Vec<u32>>,
    /// Per definition: the definitions referring to its key.
    dependents: Vec<Vec<u32>>,
    /// Per definition: the definitions it refers to.
    upstream: Vec<Vec<u32>>,
    /// Definitions with a value for a person with no events and no traits.
    vacuous: Vec<u32>,
}

impl Index {
    /// Indexes `defs` (key, definition), given in evaluation order (every
    /// definition after those it refers to). `now` (unix ms) is the time
    /// the vacuous definitions are found at.
    pub fn new(defs: &[(&str, &Definition)], now: i64) -> Index {
        let mut index = Index {
            dependents: vec![Vec::new(); defs.len()],
            upstream: vec![Vec::new(); defs.len()],
            ..Index::default()
        };
        let position: HashMap<&str, u32> = (0u32..).zip(defs).map(|(i, (k, _))| (*k, i)).collect();
        for (i, (_, d)) in (0u32..).zip(defs) {
            let mut events = BTreeSet::new();
            let mut traits = BTreeSet::new();
            reads(d, &mut events, &mut traits);
            for e in events {
                index.by_event.entry(e).or_default().push(i);
            }
            for t in traits {
                index.by_trait.entry(t).or_default().push(i);
            }
            let refs = d.audience_refs().into_iter().chain(d.computed_trait_refs());
            for r in refs {
                if let Some(&j) = position.get(r.as_str()) {
                    index.upstream[i as usize].push(j);
                    index.dependents[j as usize].push(i);
                }
            }
        }
        for user_ids in [Vec::new(), vec![String::new()]] {
            let nobody = Profile {
                user_ids,
                ..Profile::default()
            };
            let mut eval = Evaluation::default();
            for (i, (k, d)) in (0u32..).zip(defs) {
                if evaluate(k, d, &nobody, now, &mut eval).is_some() {
                    index.vacuous.push(i);
                }
            }
        }
        index.vacuous.sort_unstable();
        index.vacuous.dedup();
        index
    }

    /// The definitions to evaluate for `touched`, in evaluation order:
    /// those it reaches, those referring to them, and those they refer to.
    pub fn candidates(&self, touched: &Touched) -> Vec<u32> {
        let mut reached = BTreeSet::new();
        for (kind, name) in &touched.events {
            let any = (kind.clone(), None);
            if let Some(name) = name
                && let Some(hit) = self.by_event.get(&(kind.clone(), Some(name.clone())))
            {
                reached.extend(hit.iter().copied());
            }
            if let Some(hit) = self.by_event.get(&any) {
                reached.extend(hit.iter().copied());
            }
        }
        for t in &touched.traits {
            if let Some(hit) = self.by_trait.get(t) {
                reached.extend(hit.iter().copied());
            }
        }
        if touched.vacuous {
            reached.extend(self.vacuous.iter().copied());
        }
        close(&mut reached, &self.dependents);
        close(&mut reached, &self.upstream);
        reached.into_iter().collect()
    }

    /// `of` and the definitions it refers to, in evaluation order.
    pub fn with_upstream(&self, of: u32) -> Vec<u32> {
        let mut set = BTreeSet::from([of]);
        close(&mut set, &self.upstream);
        set.into_iter().collect()
    }

    /// How many definitions hold for a person with nothing.
    pub fn vacuous_count(&self) -> usize {
        self.vacuous.len()
    }
}

/// Adds to `set` everything reachable from it through `edges`.
fn close(set: &mut BTreeSet<u32>, edges: &[Vec<u32>]) {
    let mut todo: Vec<u32> = set.iter().copied().collect();
    while let Some(i) = todo.pop() {
        for &j in edges.get(i as usize).into_iter().flatten() {
            if set.insert(j) {
                todo.push(j);
            }
        }
    }
}

/// The event keys and identify trait keys `def` reads.
pub fn reads(def: &Definition, events: &mut BTreeSet<EventKey>, traits: &mut BTreeSet<String>) {
    match def {
        Definition::Trait(t) => {
            events.insert(("track".to_owned(), Some(t.event.clone())));
        }
        Definition::Audience(a) => condition(&a.condition, events, traits),
    }
}

fn performed(p: &Performed, events: &mut BTreeSet<EventKey>) {
    events.insert((p.kind.clone(), p.event.clone()));
}

fn condition(c: &Condition, events: &mut BTreeSet<EventKey>, traits: &mut BTreeSet<String>) {
    match c {
        Condition::And(items) | Condition::Or(items) => {
            items.iter().for_each(|i| condition(i, events, traits));
        }
        Condition::Not(inner) => condition(inner, events, traits),
        Condition::Performed(p) | Condition::NotPerformed(p) => performed(p, events),
        Condition::Trait(cmp) => {
            traits.insert(cmp.key.clone());
        }
        Condition::ComputedTrait(_) | Condition::Audience(_) => {}
    }
}

#[cfg(test)]
#[path = "index_tests.rs"]
mod tests;
