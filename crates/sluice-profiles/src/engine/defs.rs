//! The live definitions, parsed, ordered for evaluation (computed traits
//! first, then audiences after the audiences they refer to) and indexed by
//! what they read ([`crate::index`]).
//!
//! Kept up to date by change: the store stamps every change of a
//! definition with a version ([`sluice_store::DefinitionStore`]), and a
//! refresh reads and parses only the definitions changed since the last
//! one, so a round with no change costs one small read, and one change
//! costs its own parse, not a parse of every definition.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use sluice_store::{Computation, Store};

use super::compute::Compute;
use crate::error::ProfileError;

use crate::definition::Definition;
use crate::index::Index;

/// A live definition: its row and its parsed form.
pub struct Item {
    pub c: Computation,
    pub d: Definition,
}

#[derive(Default)]
pub struct Defs {
    /// In evaluation order.
    pub items: Vec<Arc<Item>>,
    /// Position in `items` by computation id.
    pub by_id: HashMap<String, u32>,
    pub index: Index,
    /// The space id the messages carry (`personas.space_id`).
    pub space_id: String,
    /// Top-level event properties the definitions read
    /// ([`crate::reads::property_roots`]).
    pub roots: std::collections::BTreeSet<String>,
    /// The change version these were read at (-1: never read).
    version: i64,
    live: HashMap<String, Arc<Item>>,
}

impl Defs {
    /// No definitions yet (read everything on the first refresh).
    pub fn empty(space_id: String) -> Defs {
        Defs {
            space_id,
            version: -1,
            ..Defs::default()
        }
    }

    /// `computations` parsed and indexed (the preview's definitions).
    pub fn new(computations: Vec<Computation>, space_id: String) -> Defs {
        let mut live = HashMap::new();
        for c in computations.into_iter().filter(|c| c.deleted_at.is_none()) {
            if let Some(item) = parse(c) {
                live.insert(item.c.id.clone(), Arc::new(item));
            }
        }
        build(live, space_id, -1)
    }

    /// The definition with this computation id.
    pub fn get(&self, id: &str) -> Option<&Arc<Item>> {
        self.by_id.get(id).and_then(|&i| self.items.get(i as usize))
    }

    /// The definitions as they stand now, or `None` when none changed since
    /// `defs` was read. Only the changed ones are parsed again; ordering and
    /// indexing run on `cpu`, the engine's low-priority thread, so that a
    /// burst of creates is not slowed by the engine keeping up with it.
    pub async fn refreshed(
        defs: &Arc<Defs>,
        store: &dyn Store,
        cpu: &Compute,
    ) -> Result<Option<Defs>, ProfileError> {
        let (version, changed) = store.computations_changed(defs.version).await?;
        if changed.is_empty() {
            return Ok(None);
        }
        let defs = defs.clone();
        cpu.run(move || defs.apply(version, changed))
            .await
            .map(Some)
    }

    fn apply(&self, version: i64, changed: Vec<Computation>) -> Defs {
        let mut live = self.live.clone();
        for c in changed {
            if c.deleted_at.is_some() {
                live.remove(&c.id);
                continue;
            }
            let kept = live
                .get(&c.id)
                .filter(|old| old.c.revision == c.revision)
                .map(|old| old.d.clone());
            let item = match kept {
                Some(d) => Some(Item { c, d }),
                None => parse(c),
            };
            if let Some(item) = item {
                live.insert(item.c.id.clone(), Arc::new(item));
            }
        }
        let version = version.max(self.version);
        build(live, self.space_id.clone(), version)
    }
}

/// Parses a stored definition; one that no longer parses is skipped (logged).
fn parse(c: Computation) -> Option<Item> {
    match Definition::from_stored(&c.class, &c.definition) {
        Ok(d) => Some(Item { c, d }),
        Err(e) => {
            tracing::warn!(id = %c.id, error = %e, "skipping unreadable definition");
            None
        }
    }
}

/// Orders and indexes `live`: computed traits in creation order, then
/// audiences, each after the audiences it refers to (a cycle, refused by
/// the API, ends up last).
fn build(live: HashMap<String, Arc<Item>>, space_id: String, version: i64) -> Defs {
    let mut all: Vec<Arc<Item>> = live.values().cloned().collect();
    all.sort_by(|a, b| (a.c.created_at, &a.c.id).cmp(&(b.c.created_at, &b.c.id)));
    let (mut items, audiences): (Vec<_>, Vec<_>) = all
        .into_iter()
        .partition(|i| matches!(i.d, Definition::Trait(_)));
    // Kahn's algorithm over references between audiences.
    let keys: HashMap<&str, usize> = audiences
        .iter()
        .enumerate()
        .map(|(n, i)| (i.c.key.as_str(), n))
        .collect();
    let mut waiting: Vec<usize> = vec![0; audiences.len()];
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); audiences.len()];
    for (n, a) in audiences.iter().enumerate() {
        for r in a.d.audience_refs() {
            if let Some(&m) = keys.get(r.as_str()).filter(|&&m| m != n) {
                waiting[n] += 1;
                dependents[m].push(n);
            }
        }
    }
    let mut ready: BTreeMap<usize, ()> = (0..audiences.len())
        .filter(|&n| waiting[n] == 0)
        .map(|n| (n, ()))
        .collect();
    let mut placed = vec![false; audiences.len()];
    while let Some((n, ())) = ready.pop_first() {
        placed[n] = true;
        items.push(audiences[n].clone());
        for &m in &dependents[n] {
            waiting[m] -= 1;
            if waiting[m] == 0 {
                ready.insert(m, ());
            }
        }
    }
    items.extend(
        (0..audiences.len())
            .filter(|&n| !placed[n])
            .map(|n| audiences[n].clone()),
    );
    let by_id = (0u32..)
        .zip(&items)
        .map(|(n, i)| (i.c.id.clone(), n))
        .collect();
    let keyed: Vec<(&str, &Definition)> = items.iter().map(|i| (i.c.key.as_str(), &i.d)).collect();
    let index = Index::new(&keyed, chrono::Utc::now().timestamp_millis());
    let roots = crate::reads::property_roots(items.iter().map(|i| &i.d));
    Defs {
        items,
        by_id,
        index,
        space_id,
        roots,
        version,
        live,
    }
}
