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
            // The store cannot be read (a blip, a failover): the copy
            // loaded last is still the best answer, as no one changes a
            // destination without the store either. Without it, each
            // delivery dispatched meanwhile would wait out its lease. The
            // next reload is tried a TTL later, not at every delivery.
            self.loaded_at = Some(Instant::now());
            return match self.by_id.get(id) {
                Some(found) => Lookup::Found(found.clone()),
                None => Lookup::Unavailable,
            };
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

#[cfg(test)]
mod tests {
    use sluice_store::sqlite::{SqliteConfig, SqliteStore};
    use sluice_store::{CatalogStore, NewDestination, WebhookSettings};

    use super::*;

    #[tokio::test]
    async fn serves_the_copy_it_has_while_the_store_cannot_be_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SqliteStore::open(SqliteConfig::new(dir.path().join("s.db")))
            .await
            .expect("open");
        store
            .create_destination(NewDestination {
                id: "dst_1".into(),
                name: "hook".into(),
                kind: "Webhooks".into(),
                enabled: true,
                settings: WebhookSettings::default(),
                source_ids: Vec::new(),
            })
            .await
            .expect("create");
        // Every lookup would reload.
        let mut cache = DestinationCache::new(Duration::ZERO);
        assert!(matches!(cache.get(&store, "dst_1").await, Lookup::Found(_)));

        store.close().await;
        let known = cache.get(&store, "dst_1").await;
        assert!(
            matches!(&known, Lookup::Found(d) if d.id == "dst_1"),
            "the copy loaded before the store went"
        );
        let unknown = cache.get(&store, "dst_2").await;
        assert!(matches!(unknown, Lookup::Unavailable), "nothing to go on");
    }
}
