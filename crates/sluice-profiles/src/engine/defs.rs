//! The live definitions, parsed and ordered for evaluation: computed traits
//! first, then audiences after the audiences they refer to.

use sluice_store::Computation;

use crate::definition::Definition;

pub struct Defs {
    pub items: Vec<(Computation, Definition)>,
}

impl Defs {
    /// Parses `computations`; one that no longer parses is skipped (logged).
    pub fn new(computations: Vec<Computation>) -> Defs {
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
        Defs { items: traits }
    }
}
