//! The sections of [`super::Config`] besides the top level: storage,
//! collection limits, delivery, retention, schema and personas (the HTTP
//! server's and metrics' sections live with the server in `crate::serve`).
//! Each has commented defaults; `docs/configuration.md` is the reference.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::StorageBackend;

#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StorageConfig {
    pub backend: StorageBackend,
    /// SQLite only. `full` (default): a commit survives power loss.
    /// `normal`: survives a crash of the process (kill -9) but may lose the
    /// last commits on power loss, for more throughput.
    pub synchronous: String,
    /// Required when `backend = "postgres"`. It usually holds a password,
    /// so `Debug` redacts it.
    pub postgres_url: Option<String>,
    /// Connections per node.
    pub postgres_pool_size: usize,
    /// PostgreSQL schema for Sluice's tables (created if missing); unset uses
    /// the connection's default (`public`).
    pub postgres_schema: Option<String>,
    /// Longest wait for the store on a request's behalf (an ingest commit,
    /// an admin API call) before `503 unavailable` (10 s): a database that
    /// hangs instead of refusing must not hang every client with it.
    pub timeout_ms: u64,
    /// How long a source's committed messageIds are remembered (86400 s,
    /// 24 h): an event whose messageId its source sent within this window
    /// is answered 200 but neither stored nor delivered again. 0 turns
    /// deduplication off. SQLite keeps about 5 bytes of memory per id in
    /// the window; PostgreSQL a row of `message_ids` (docs/configuration.md).
    pub dedup_window_secs: u64,
    /// SQLite only. `true` (default): deleted and updated rows are zeroed,
    /// and a purge ends by zeroing the database's free space, so no byte of
    /// a purged user is left in the files (docs/privacy.md). `false`:
    /// faster purges; deleted bytes stay until SQLite reuses the space.
    pub secure_delete: bool,
}

impl std::fmt::Debug for StorageConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StorageConfig")
            .field("backend", &self.backend)
            .field("synchronous", &self.synchronous)
            .field("postgres_url", &self.postgres_url.as_ref().map(|_| "(set)"))
            .field("postgres_pool_size", &self.postgres_pool_size)
            .field("postgres_schema", &self.postgres_schema)
            .field("timeout_ms", &self.timeout_ms)
            .field("dedup_window_secs", &self.dedup_window_secs)
            .field("secure_delete", &self.secure_delete)
            .finish()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsConfig {
    /// Largest single call and batch item, in bytes (32 KiB).
    pub max_call_bytes: usize,
    /// Largest batch request, decompressed, in bytes (500 KiB).
    pub max_batch_bytes: usize,
    /// Most events in one batch (2500).
    pub max_batch_events: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DeliverySettings {
    /// Time an endpoint has to answer, headers and body (5 s, the answer time
    /// docs/receivers.md asks of receivers).
    pub timeout_ms: u64,
    /// How long a failing message is retried after its arrival (4 h).
    pub retry_window_secs: u64,
    /// First retry delay before jitter (1 s); doubles per attempt.
    pub backoff_base_ms: u64,
    /// Longest delay between two attempts (10 min).
    pub backoff_cap_ms: u64,
    /// Concurrent requests per destination (64).
    pub concurrency_per_destination: usize,
    /// A PEM bundle of extra CA certificates, for private CAs.
    pub extra_ca_file: Option<PathBuf>,
    /// Networks webhooks may reach besides public addresses, as CIDRs
    /// (`["10.0.0.0/8"]`). Loopback, private, link-local and other
    /// non-public ranges are refused unless listed. `["0.0.0.0/0", "::/0"]`
    /// turns the guard off (warned at start). Default: none.
    pub allow_networks: Vec<String>,
    /// Extra static header names whose values are credentials, masked when
    /// shown (beyond Authorization, Cookie and names containing key, token,
    /// secret, signature, password or auth).
    pub sensitive_headers: Vec<String>,
    /// Pending deliveries one destination may hold (1,000,000); beyond it
    /// the oldest are dead-lettered with a reason. 0 disables the cap.
    pub max_pending_per_destination: u64,
    /// How often the pending cap is enforced (5 s).
    pub pending_cap_interval_ms: u64,
    /// Count delivery health (outcomes and latencies per destination) for
    /// the dashboard's overview and `/metrics` (on).
    pub health: bool,
    /// How often this node merges its health counts into the store (5 s):
    /// what `kill -9` can lose.
    pub health_flush_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetentionConfig {
    /// Delivered events older than this are deleted (7 days); 0 keeps all.
    pub events_hours: u64,
    /// How often retention runs (10 min).
    pub interval_secs: u64,
}

/// The audit log (docs/admin-api.md, "Audit log").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuditConfig {
    /// Entries older than this are deleted (365 days); 0 keeps all.
    /// Regulations' entries are always kept.
    pub retention_days: u64,
    /// How often old entries are pruned (1 h), in batches of
    /// `prune_batch` entries per transaction.
    pub prune_interval_secs: u64,
    /// Entries deleted per transaction when pruning (1000).
    pub prune_batch: usize,
}

impl Default for AuditConfig {
    fn default() -> Self {
        AuditConfig {
            retention_days: 365,
            prune_interval_secs: 3600,
            prune_batch: 1000,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SchemaConfig {
    /// Record what each source sends (on). Block rules and destination
    /// filters work either way.
    pub enabled: bool,
    /// How often the in-memory schema aggregate is written (10 s): what a
    /// crash can lose of the schema's counts (never events).
    pub flush_interval_ms: u64,
    /// Most schema entries kept per source (10000): event, page and screen
    /// names, trait keys and property keys together. Beyond it, observations
    /// are counted as overflow.
    pub max_entries_per_source: usize,
}

impl Default for SchemaConfig {
    fn default() -> Self {
        SchemaConfig {
            enabled: true,
            flush_interval_ms: 10_000,
            max_entries_per_source: 10_000,
        }
    }
}

/// The profile engine (computed traits, audiences); see docs/personas.md.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PersonasConfig {
    /// Run the profile engine on this node (true).
    pub enabled: bool,
    /// How often an idle engine looks for events, due windows and jobs
    /// (200 ms); also the granularity of window expiry.
    pub poll_interval_ms: u64,
    /// The engine lease: a dead node's work moves to another node after
    /// this (15 s).
    pub lease_ttl_secs: u64,
    /// Events read per engine step (250; see docs/configuration.md).
    pub batch_events: u32,
    /// Defer engine steps during ingest bursts (both backends) and, without
    /// definitions, while delivery saturates SQLite's writer (true);
    /// see docs/personas.md, "Pacing".
    pub defer_to_ingest: bool,
    /// How far ahead window changes are prepared, in seconds (60): their
    /// messages wait in the outbox for the boundary, so a window closing
    /// for many people at once is sent on time. 0 evaluates each change
    /// only once it is due. See docs/personas.md, "Windows".
    pub schedule_ahead_secs: u64,
    /// The space id the engine's messages carry in `context.personas`
    /// (`space_id` and `namespace`), as Segment's Engage space id; one per
    /// installation (`spa_sluice`). Give every node the same value.
    pub space_id: String,
}

impl Default for PersonasConfig {
    fn default() -> Self {
        PersonasConfig {
            enabled: true,
            poll_interval_ms: 200,
            lease_ttl_secs: 15,
            batch_events: 250,
            defer_to_ingest: true,
            schedule_ahead_secs: 60,
            space_id: sluice_profiles::engine::DEFAULT_SPACE_ID.to_owned(),
        }
    }
}

impl Default for StorageConfig {
    fn default() -> Self {
        StorageConfig {
            backend: StorageBackend::Sqlite,
            synchronous: "full".into(),
            postgres_url: None,
            postgres_pool_size: 16,
            postgres_schema: None,
            timeout_ms: 10_000,
            dedup_window_secs: 24 * 3600,
            secure_delete: true,
        }
    }
}

impl Default for LimitsConfig {
    fn default() -> Self {
        let l = sluice_model::Limits::default();
        LimitsConfig {
            max_call_bytes: l.max_call_bytes,
            max_batch_bytes: l.max_batch_bytes,
            max_batch_events: l.max_batch_events,
        }
    }
}

impl Default for DeliverySettings {
    fn default() -> Self {
        DeliverySettings {
            timeout_ms: 5_000,
            retry_window_secs: 4 * 3600,
            backoff_base_ms: 1_000,
            backoff_cap_ms: 600_000,
            concurrency_per_destination: 64,
            extra_ca_file: None,
            allow_networks: Vec::new(),
            sensitive_headers: Vec::new(),
            max_pending_per_destination: 1_000_000,
            pending_cap_interval_ms: 5_000,
            health: true,
            health_flush_ms: 5_000,
        }
    }
}

impl Default for RetentionConfig {
    fn default() -> Self {
        RetentionConfig {
            events_hours: 7 * 24,
            interval_secs: 600,
        }
    }
}

impl StorageConfig {
    /// The deduplication window the stores take: `None` when off.
    pub fn dedup_window(&self) -> Option<std::time::Duration> {
        (self.dedup_window_secs > 0).then(|| std::time::Duration::from_secs(self.dedup_window_secs))
    }
}
