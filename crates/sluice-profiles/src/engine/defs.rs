//! The live definitions, parsed and ordered for evaluation: computed traits
//! first, then audiences after the audiences they refer to.

use std::collections::BTreeSet;

use sluice_store::Computation;

use crate::definition::Definition;

#[derive(Default)]
pub struct Defs {
    pub items: Vec<(Computation, Definition)>,
    /// The space id the messages carry (`personas.space_id`).
    pub space_id: String,
    /// Top-level event properties the definitions read
    /// ([`crate::reads::property_roots`]).
    pub roots: BTreeSet<String>,
    /// What `items` was parsed from: (id, revision, destinations).
    seen: Vec<(String, i64, Vec<String>)>,
}

fn fingerprint(computations: &[Computation]) -> Vec<(String, i64, Vec<String>)> {
    computations
        .iter()
        .map(|c| (c.id.clone(), c.revision, c.destination_ids.clone()))
        .collect()
}

impl Defs {
    /// No definitions yet.
    pub fn empty(space_id: String) -> Defs {
        Defs {
            space_id,
            ..Defs::default()
        }
    }

    /// `computations` parsed, or `None` when no definition, destination
    /// list or the set of definitions changed since `self` was parsed
    /// (parsing and ordering every round would cost more than the read).
    pub fn refreshed(&self, computations: Vec<Computation>) -> Option<Defs> {
        (fingerprint(&computations) != self.seen)
            .then(|| Defs::new(computations, self.space_id.clone()))
    }

    /// Parses `computations`; one that no longer parses is skipped (logged).
    pub fn new(computations: Vec<Computation>, space_id: String) -> Defs {
        let seen = fingerprint(&computations);
        let mut traits = Vec::new();
        let mut audiences = Vec::new();
        for c in computations {
            match Definition::from_stored(&c.class, &c.definition) {
                Ok(d @ Definition::Trait(_)) => traits.push((c, d)),
                Ok(d) => audiences.push((c, d)),
                Err(e) => tracing::warn!(id = %c.id, error = %e, "skipping unreadable definition"),
            }
        }
        // Topological order; a cycle (refused by the API) ends up last.
        let mut ordered: Vec<(Computation, Definition)> = Vec::new();
        while !audiences.is_empty() {
            let ready = audiences
                .iter()
                .position(|(_, d): &(Computation, Definition)| {
                    d.audience_refs().iter().all(|r| {
                        ordered.iter().any(|(c, _)| &c.key == r)
                            || !audiences.iter().any(|(c, _)| &c.key == r)
                    })
                });
            let next = audiences.remove(ready.unwrap_or(0));
            ordered.push(next);
        }
        traits.extend(ordered);
        let roots = crate::reads::property_roots(traits.iter().map(|(_, d)| d));
        Defs {
            items: traits,
            space_id,
            roots,
            seen,
        }
    }
}
