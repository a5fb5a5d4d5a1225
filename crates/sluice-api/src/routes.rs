//! The in-memory routing table: write key → source → destinations, with the
//! source's block rules and its destinations' filters.
//!
//! Ingest consults it for every request, so it lives in memory and is
//! replaced whole (copy on write) when the admin API changes a source,
//! destination, rules or filters, and on a timer so that changes made by
//! other nodes sharing the database arrive within the refresh interval.
//! Rules and filters are parsed here, once per reload, never per event.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use sluice_schema::{FilterSet, SourceRules};
use sluice_store::{Store, StoreError, keys};

/// The name of the Webhooks destination type, as `integrations` spells it.
pub const WEBHOOKS: &str = "Webhooks";

/// What ingest needs to know about one source.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceRoute {
    pub source_id: String,
    pub enabled: bool,
    /// Enabled Webhooks destinations connected to the source.
    pub destinations: Vec<String>,
    /// The source's block rules, when it has any that can act.
    pub rules: Option<Arc<SourceRules>>,
    /// Filters of connected destinations that have some: `(destination id,
    /// filters)`.
    pub filters: Vec<(String, Arc<FilterSet>)>,
}

#[derive(Debug, Default)]
struct Snapshot {
    /// Which reload built this snapshot. Reloads can overlap (the timer and
    /// an admin change); a reload that read the store earlier must never
    /// replace one that read it later, or a just-created source would vanish
    /// until the next refresh.
    generation: u64,
    /// By the SHA-256 digest of the write key (the stored hash's bytes).
    by_key_hash: HashMap<[u8; 32], Arc<SourceRoute>>,
}

/// A shared, atomically replaced routing snapshot.
#[derive(Clone)]
pub struct RouteTable {
    store: Arc<dyn Store>,
    current: Arc<RwLock<Arc<Snapshot>>>,
    generations: Arc<AtomicU64>,
}

impl RouteTable {
    /// Builds the table from the store.
    pub async fn load(store: Arc<dyn Store>) -> Result<Self, StoreError> {
        let table = RouteTable {
            store,
            current: Arc::new(RwLock::new(Arc::new(Snapshot::default()))),
            generations: Arc::new(AtomicU64::new(0)),
        };
        table.reload().await?;
        Ok(table)
    }

    /// Rebuilds the snapshot from the store and swaps it in.
    pub async fn reload(&self) -> Result<(), StoreError> {
        let generation = self.generations.fetch_add(1, Ordering::SeqCst) + 1;
        let sources = self.store.list_sources().await?;
        let destinations = self.store.list_destinations().await?;
        let mut rules = parsed(self.store.list_source_rules().await?, |doc| {
            SourceRules::parse(doc).map(|r| (!r.is_empty()).then_some(r))
        });
        let filters = parsed(self.store.list_destination_filters().await?, |doc| {
            FilterSet::parse(doc).map(|f| (!f.is_empty()).then_some(f))
        });
        let mut by_key_hash = HashMap::with_capacity(sources.len());
        for source in sources {
            let connected: Vec<String> = destinations
                .iter()
                .filter(|d| d.enabled && d.kind == WEBHOOKS && d.source_ids.contains(&source.id))
                .map(|d| d.id.clone())
                .collect();
            let source_filters = connected
                .iter()
                .filter_map(|d| filters.get(d).map(|f| (d.clone(), Arc::clone(f))))
                .collect();
            let route = SourceRoute {
                rules: rules.remove(&source.id),
                source_id: source.id,
                enabled: source.enabled,
                destinations: connected,
                filters: source_filters,
            };
            match keys::parse_hash(&source.write_key_hash) {
                Some(digest) => {
                    by_key_hash.insert(digest, Arc::new(route));
                }
                None => tracing::warn!(
                    source = %route.source_id,
                    "stored write key hash is not a SHA-256 digest; the source cannot authenticate"
                ),
            }
        }
        let snapshot = Arc::new(Snapshot {
            generation,
            by_key_hash,
        });
        let mut guard = match self.current.write() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        if guard.generation < generation {
            *guard = snapshot;
        }
        Ok(())
    }

    /// The route of the source owning `write_key`, if any. The key is
    /// hashed once; the final comparison of digests is constant time.
    pub fn lookup(&self, write_key: &str) -> Option<Arc<SourceRoute>> {
        let digest = keys::secret_digest(write_key);
        let snapshot = match self.current.read() {
            Ok(guard) => Arc::clone(&guard),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        };
        let (stored, route) = snapshot.by_key_hash.get_key_value(&digest)?;
        keys::digests_match(stored, &digest).then(|| Arc::clone(route))
    }
}

/// Parses stored documents by id, keeping those that can act. A document
/// that no longer parses (written by a newer version) is skipped with a
/// warning rather than failing the whole table.
fn parsed<T>(
    docs: Vec<(String, String)>,
    parse: impl Fn(&serde_json::Value) -> Result<Option<T>, sluice_schema::RuleError>,
) -> HashMap<String, Arc<T>> {
    let mut out = HashMap::with_capacity(docs.len());
    for (id, text) in docs {
        let doc = serde_json::from_str(&text).unwrap_or(serde_json::Value::Null);
        match parse(&doc) {
            Ok(Some(v)) => {
                out.insert(id, Arc::new(v));
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(id, error = %e, "ignoring stored rules or filters"),
        }
    }
    out
}
