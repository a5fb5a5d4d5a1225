//! Durable storage for Sluice.
//!
//! One trait, [`Store`], is all the rest of Sluice sees; it is the sum of one
//! sub-trait per concern, each in its own module. Backends:
//! - `sqlite` (feature `sqlite`, default): embedded, zero setup, single node.
//! - `postgres` (feature `postgres`): one shared database, several nodes.
//!
//! Modules:
//! - [`types`]: the records kept and the requests taken.
//! - [`keys`]: ids, write keys and their hashes (constant-time compare).
//! - [`log_gate`]: rate limits for log lines that repeat during an outage.
//! - [`error`]: the error type, [`StoreError`].
//! - [`catalog`]: [`CatalogStore`], service settings, sources, destinations.
//! - [`cluster`]: [`ClusterStore`], which nodes are alive.
//! - [`events`]: [`EventStore`], the commit path (events, outbox, usage in
//!   one transaction), event reads, retention.
//! - [`delivery`]: [`DeliveryStore`], leasing, reporting and reading
//!   deliveries.
//! - [`local`]: deliveries a node's ingest leases to its own delivery
//!   engine as it commits them, handed over without a claim.
//! - `records`: record logic both backends share (patches, error summaries).
//! - `settled`: a delivery's first round of attempts kept in its own row
//!   when that round settles it.
//! - [`source_schema`]: [`SchemaStore`], the observed schema, block rules,
//!   destination filters and blocked-call usage.
//! - [`profiles`]: [`ProfileStore`], the profile engine's storage.
//! - [`regulations`]: [`RegulationStore`], user deletion and suppression.
//! - [`team`]: [`TeamStore`], users, API tokens with roles, user sessions.
//! - [`audit`]: [`AuditStore`], the audit log of changes.
//! - [`health`]: [`HealthStore`], delivery health aggregates per
//!   destination, and the in-memory [`health::Tally`] that feeds them.
//! - [`seen`]: [`SeenStore`], the keys the Kafka shape's consumers read,
//!   saved so that deduplication survives a partition changing hands.
//! - [`tally`]: [`TallyStore`], usage counted from the Kafka shape's log,
//!   each call once.
//!
//! One behavioural suite, written against the public traits only, checks
//! that every backend meets the contract: it lives with the crate's
//! integration tests (`tests/it/conformance/`) and runs each case on SQLite
//! and on PostgreSQL.
//!
//! The data flows one way: `append` commits events together with their
//! pending deliveries and usage counts (an outbox), delivery workers `claim_due`
//! and `report` attempts, and the admin API reads.

pub mod audit;
pub mod catalog;
pub mod cluster;
pub mod delivery;
pub mod error;
pub mod events;
pub mod health;
pub mod keys;
pub mod local;
pub mod log_gate;
pub mod log_record;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod profiles;
mod queries;
mod records;
pub mod regulations;
pub mod seen;
mod settled;
pub mod source_schema;
mod sql;
#[cfg(feature = "sqlite")]
pub mod sqlite;
pub mod tally;
pub mod team;
pub mod types;

use std::time::Duration;

pub use audit::{AuditEntry, AuditQuery, AuditStore, NewAuditEntry};
pub use catalog::CatalogStore;
pub use cluster::{ClusterStore, Members};
pub use delivery::DeliveryStore;
pub use error::{ErrorKind, StoreError};
pub use events::{EventLog, EventStore, StoreLog};
pub use health::HealthStore;
#[cfg(feature = "postgres")]
pub use postgres::{PostgresConfig, PostgresStore};
pub use profiles::*;
pub use regulations::*;
pub use seen::{SeenSlice, SeenStore};
pub use source_schema::{
    BlockedDay, SchemaEntry, SchemaEntryDelta, SchemaFlush, SchemaPage, SchemaQuery, SchemaSort,
    SchemaStore,
};
#[cfg(feature = "sqlite")]
pub use sqlite::{Scrubbed, SqliteConfig, SqliteStore, Synchronous};
pub use tally::{BlockedCount, DayCounts, LogTally, TallyStore};
pub use team::{
    ApiToken, NewApiToken, NewUser, PasswordChange, Role, TeamStore, User, UserPatch, UserSession,
};
pub use types::*;

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// The storage contract: every concern's sub-trait, one per module. Every
/// method is atomic; [`EventStore::append`] returns only after the events are
/// durable (committed, fsynced per the backend's policy). Any type
/// implementing all the sub-traits is a `Store`.
pub trait Store:
    CatalogStore
    + ClusterStore
    + EventStore
    + DeliveryStore
    + SchemaStore
    + ProfileStore
    + DefinitionStore
    + RegulationStore
    + TeamStore
    + AuditStore
    + HealthStore
    + SeenStore
    + TallyStore
    + Send
    + Sync
    + 'static
{
}

impl<T> Store for T where
    T: CatalogStore
        + ClusterStore
        + EventStore
        + DeliveryStore
        + SchemaStore
        + ProfileStore
        + DefinitionStore
        + RegulationStore
        + TeamStore
        + AuditStore
        + HealthStore
        + SeenStore
        + TallyStore
        + Send
        + Sync
        + 'static
{
}

/// How long a claimed delivery stays leased when a worker does not report.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(60);
