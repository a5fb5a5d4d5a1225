//! A short-lived cache of destination settings, so the dispatcher does not
//! read the store once per delivery.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_store::{Destination, Store};

/// Destinations by id, re-read when older than the TTL, when invalidated,
/// or (once per refresh) when an unknown id shows up.
pub(super) struct DestinationCache {
    ttl: Duration,
    by_id: HashMap<String, Arc<Destination>>,
    loaded_at: Option<Instant>,
}

/// What the cache knows about a destination id.
pub(super) enum Lookup {
    Found(Arc<Destination>),
    /// Not in the store (deleted).
    Missing,
    /// The store could not be read; try the delivery later.
    Unavailable,
}

impl DestinationCache {
    pub(super) fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            by_id: HashMap::new(),
            loaded_at: None,
        }
    }

    /// Forces a reload on next use (settings changed through the admin API).
    pub(super) fn invalidate(&mut self) {
        self.loaded_at = None;
    }

    pub(super) async fn get(&mut self, store: &dyn Store, id: &str) -> Lookup {
        let stale = self.loaded_at.is_none_or(|at| at.elapsed() >= self.ttl);
        if stale && !self.reload(store).await {
            return Lookup::Unavailable;
        }
        if let Some(found) = self.by_id.get(id) {
            return Lookup::Found(found.clone());
        }
        // Possibly created since the last load: look it up directly.
        match store.get_destination(id).await {
            Ok(Some(dest)) => {
                let dest = Arc::new(dest);
                self.by_id.insert(id.to_owned(), dest.clone());
                Lookup::Found(dest)
            }
            Ok(None) => Lookup::Missing,
            Err(e) => {
                sluice_store::warn_every!(
                    sluice_store::log_gate::BACKGROUND_EVERY,
                    e,
                    "reading destination failed"
                );
                Lookup::Unavailable
            }
        }
    }

    async fn reload(&mut self, store: &dyn Store) -> bool {
        match store.list_destinations().await {
            Ok(list) => {
                self.by_id = list
                    .into_iter()
                    .map(|d| (d.id.clone(), Arc::new(d)))
                    .collect();
                self.loaded_at = Some(Instant::now());
                true
            }
            Err(e) => {
                sluice_store::warn_every!(
                    sluice_store::log_gate::BACKGROUND_EVERY,
                    e,
                    "listing destinations failed"
                );
                false
            }
        }
    }
}
