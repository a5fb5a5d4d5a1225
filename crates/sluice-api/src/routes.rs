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
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use tokio::sync::Semaphore;

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
    misses: Arc<Misses>,
}

/// Store look-ups of write keys the snapshot does not know: a key created
/// on another node is good at once, not after the next refresh (Segment's
/// libraries do not retry a 401, so those calls would be lost). Bounded so
/// that a client sending a wrong key cannot turn each call into a read.
struct Misses {
    /// Look-ups in flight at once; a miss past them is answered from the
    /// snapshot alone.
    permits: Semaphore,
    /// Keys the store did not know either, by digest, until the instant
    /// they may be looked up again.
    unknown: Mutex<HashMap<[u8; 32], Instant>>,
}

/// Store look-ups of unknown keys in flight at once, per node.
const MISS_LOOKUPS: usize = 4;

/// How long a key the store did not know is not looked up again.
const UNKNOWN_KEY_TTL: Duration = Duration::from_secs(1);

/// Unknown keys remembered at most; past it the memory starts afresh.
const UNKNOWN_KEYS_MAX: usize = 4096;

impl RouteTable {
    /// Builds the table from the store.
    pub async fn load(store: Arc<dyn Store>) -> Result<Self, StoreError> {
        let table = RouteTable {
            store,
            current: Arc::new(RwLock::new(Arc::new(Snapshot::default()))),
            generations: Arc::new(AtomicU64::new(0)),
            misses: Arc::new(Misses {
                permits: Semaphore::new(MISS_LOOKUPS),
                unknown: Mutex::new(HashMap::new()),
            }),
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

    /// [`RouteTable::lookup`], and for a key the snapshot does not know,
    /// the store: when the key is a source's there, the table is reloaded
    /// (its destinations come with it) and the route returned. At most
    /// four such reads run at once, and a key the store did not
    /// know is not read again for a second.
    pub async fn resolve(&self, write_key: &str) -> Option<Arc<SourceRoute>> {
        let digest = keys::secret_digest(write_key);
        if let Some(route) = self.lookup_digest(&digest) {
            return Some(route);
        }
        let now = Instant::now();
        if self.misses.recently_unknown(&digest, now) {
            return None;
        }
        let _permit = self.misses.permits.try_acquire().ok()?;
        match self
            .store
            .get_source_by_key_hash(&keys::hash_secret(write_key))
            .await
        {
            Ok(Some(_)) => {}
            Ok(None) => {
                self.misses.remember_unknown(digest, now);
                return None;
            }
            // The store did not say: nothing is remembered, so the key is
            // looked up again once the store answers.
            Err(_) => return None,
        }
        if let Err(e) = self.reload().await {
            tracing::warn!(error = %e, "reloading routes for a write key new to this node");
        }
        self.lookup_digest(&digest)
    }

    /// The route of the source owning `write_key`, if any. The key is
    /// hashed once; the final comparison of digests is constant time.
    pub fn lookup(&self, write_key: &str) -> Option<Arc<SourceRoute>> {
        self.lookup_digest(&keys::secret_digest(write_key))
    }

    fn lookup_digest(&self, digest: &[u8; 32]) -> Option<Arc<SourceRoute>> {
        let snapshot = match self.current.read() {
            Ok(guard) => Arc::clone(&guard),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        };
        let (stored, route) = snapshot.by_key_hash.get_key_value(digest)?;
        keys::digests_match(stored, digest).then(|| Arc::clone(route))
    }
}

impl Misses {
    fn recently_unknown(&self, digest: &[u8; 32], now: Instant) -> bool {
        let unknown = match self.unknown.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        unknown.get(digest).is_some_and(|until| *until > now)
    }

    fn remember_unknown(&self, digest: [u8; 32], now: Instant) {
        let mut unknown = match self.unknown.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        if unknown.len() >= UNKNOWN_KEYS_MAX {
            unknown.retain(|_, until| *until > now);
            if unknown.len() >= UNKNOWN_KEYS_MAX {
                unknown.clear();
            }
        }
        unknown.insert(digest, now + UNKNOWN_KEY_TTL);
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
