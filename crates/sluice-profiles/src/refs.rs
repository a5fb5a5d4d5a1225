//! The definitions a definition refers to, read by key from the store:
//! what its evaluation needs, and what an audience's checks look at, at a
//! cost that follows its references rather than every definition.

use std::collections::BTreeSet;

use sluice_store::{Computation, Store, StoreError};

use crate::definition::Definition;

/// Every live definition `def` refers to, directly or through others,
/// read by key level by level. `own_key` (the key `def` is saved under) is
/// not read: a reference to it is a cycle back to `def`.
pub async fn closure(
    store: &dyn Store,
    def: &Definition,
    own_key: &str,
) -> Result<Vec<Computation>, StoreError> {
    let mut seen: BTreeSet<String> = BTreeSet::from([own_key.to_owned()]);
    let mut out = Vec::new();
    let mut next = keys(def);
    loop {
        next.retain(|k| !seen.contains(k));
        if next.is_empty() {
            return Ok(out);
        }
        seen.extend(next.iter().cloned());
        let found = store
            .computations_by_key(std::mem::take(&mut next).into_iter().collect())
            .await?;
        for c in found {
            if let Ok(d) = Definition::from_stored(&c.class, &c.definition) {
                next.extend(keys(&d));
            }
            out.push(c);
        }
    }
}

fn keys(def: &Definition) -> BTreeSet<String> {
    let mut out = def.audience_refs();
    out.extend(def.computed_trait_refs());
    out
}
