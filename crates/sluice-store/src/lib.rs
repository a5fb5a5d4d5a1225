//! Durable storage for Sluice.
//!
//! One trait, [`Store`], is all the rest of Sluice sees. Backends:
//! - `sqlite` (feature `sqlite`, default): embedded, zero setup, single node.
//! - `postgres` (feature `postgres`): one shared database, several nodes.
//!
//! Modules:
//! - [`types`]: the records kept and the requests taken.
//! - [`keys`]: ids, write keys and their hashes (constant-time compare).
//! - [`error`]: the error type, [`StoreError`].
//! - `records`: record logic both backends share (patches, error summaries).
//! - [`source_schema`]: [`SchemaStore`], the observed schema, block rules,
//!   destination filters and blocked-call usage.
//! - [`profiles`]: [`ProfileStore`], the profile engine's storage (a
//!   sub-trait `Store` requires).
//! - [`regulations`]: [`RegulationStore`], user deletion and suppression
//!   (a sub-trait `Store` requires).
//! - [`conformance`]: one behavioural suite every backend must pass.
//!
//! The data flows one way: `append` commits events together with their
//! pending deliveries and usage counts (an outbox), delivery workers `claim_due`
//! and `report` attempts, and the admin API reads.

pub mod conformance;
pub mod error;
pub mod keys;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod profiles;
mod records;
pub mod regulations;
pub mod source_schema;
#[cfg(feature = "sqlite")]
pub mod sqlite;
pub mod types;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use std::time::Duration;

pub use error::StoreError;
#[cfg(feature = "postgres")]
pub use postgres::{PostgresConfig, PostgresStore};
pub use profiles::*;
pub use regulations::*;
pub use source_schema::{
    BlockedDay, SchemaEntry, SchemaEntryDelta, SchemaFlush, SchemaPage, SchemaQuery, SchemaSort,
    SchemaStore,
};
#[cfg(feature = "sqlite")]
pub use sqlite::{SqliteConfig, SqliteStore, Synchronous};
pub use types::*;

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// The storage contract. Every method is atomic; `append` returns only after
/// the events are durable (committed, fsynced per the backend's policy).
/// Separate concerns live in sub-traits that `Store` requires
/// ([`SchemaStore`], [`ProfileStore`], [`RegulationStore`]).
#[async_trait]
pub trait Store: SchemaStore + ProfileStore + RegulationStore + Send + Sync + 'static {
    // --- settings kept by the service itself -------------------------------
    /// Reads a service setting (for example the generated admin token hash).
    async fn get_meta(&self, key: &str) -> Result<Option<String>>;
    /// Stores `value` under `key` unless a value exists; returns the value kept.
    async fn put_meta_if_absent(&self, key: &str, value: &str) -> Result<String>;

    // --- sources ------------------------------------------------------------
    async fn create_source(&self, new: NewSource) -> Result<Source>;
    async fn list_sources(&self) -> Result<Vec<Source>>;
    async fn get_source(&self, id: &str) -> Result<Option<Source>>;
    /// The source whose write key hashes to `hash` (see [`keys::hash_secret`]).
    async fn get_source_by_key_hash(&self, hash: &str) -> Result<Option<Source>>;
    async fn update_source(&self, id: &str, patch: SourcePatch) -> Result<Option<Source>>;
    /// Deletes a source, its connections and its usage; events and deliveries
    /// already stored stay until retention removes them.
    async fn delete_source(&self, id: &str) -> Result<bool>;

    // --- destinations -------------------------------------------------------
    /// Fails with [`StoreError::NotFound`] when a connected source is missing.
    async fn create_destination(&self, new: NewDestination) -> Result<Destination>;
    async fn list_destinations(&self) -> Result<Vec<Destination>>;
    async fn get_destination(&self, id: &str) -> Result<Option<Destination>>;
    async fn update_destination(
        &self,
        id: &str,
        patch: DestinationPatch,
    ) -> Result<Option<Destination>>;
    /// Deletes a destination; its pending deliveries become `discarded`.
    async fn delete_destination(&self, id: &str) -> Result<bool>;

    // --- ingest -------------------------------------------------------------
    /// Commits each request's events, their pending deliveries (due now) and
    /// usage counts. Concurrent callers are grouped into one transaction.
    async fn append(&self, request: AppendRequest) -> Result<()>;
    /// A source's events, newest first; `before_seq` is an exclusive cursor.
    async fn recent_events(
        &self,
        source_id: &str,
        before_seq: Option<i64>,
        limit: u32,
    ) -> Result<Vec<StoredEvent>>;
    /// Usage counters for a source, oldest day first, days in `[from, to]`.
    async fn usage(&self, source_id: &str, from: &str, to: &str) -> Result<Vec<UsageDay>>;

    // --- delivery -----------------------------------------------------------
    /// Leases up to `limit` pending deliveries due at `now` for `lease`, oldest
    /// due first. A leased delivery is not handed out again until its lease
    /// ends, so a crashed worker's work is picked up after the lease.
    async fn claim_due(
        &self,
        now: DateTime<Utc>,
        limit: u32,
        lease: Duration,
    ) -> Result<Vec<DueDelivery>>;
    /// When the earliest pending, unleased delivery falls due, if any.
    async fn next_due(&self) -> Result<Option<DateTime<Utc>>>;
    /// Records attempts and the outcome, and releases the lease. A report
    /// with attempts counts one attempt round and starts the retry window if
    /// it had not started; a report without attempts only hands the delivery
    /// back (for example with `Outcome::Retry` when the worker is saturated).
    async fn report(&self, reports: Vec<AttemptReport>) -> Result<()>;
    async fn list_deliveries(&self, filter: &DeliveryFilter) -> Result<Vec<DeliveryRecord>>;
    async fn get_delivery(&self, id: i64) -> Result<Option<DeliveryRecord>>;
    /// Attempts of one delivery, oldest first.
    async fn list_attempts(&self, delivery_id: i64) -> Result<Vec<Attempt>>;
    /// Enforces the per-destination cap on pending deliveries: for each
    /// destination with more than `cap` pending, the oldest unleased ones are
    /// dead-lettered with a reason naming the cap, until `cap` remain.
    /// Returns how many were dead-lettered (for a metric); never deletes.
    async fn cap_pending(&self, cap: u64, now: DateTime<Utc>) -> Result<u64>;
    /// Moves dead deliveries matching `filter` (its `state` is ignored) back
    /// to pending, due now, with a fresh retry window. Returns how many.
    async fn replay(&self, filter: &DeliveryFilter, now: DateTime<Utc>) -> Result<u64>;

    // --- retention ----------------------------------------------------------
    /// Deletes events received before `before` whose deliveries are all
    /// finished (not pending), with their deliveries and attempts; returns
    /// how many events were deleted. Pending work is never pruned.
    async fn prune(&self, before: DateTime<Utc>) -> Result<u64>;
}

/// How long a claimed delivery stays leased when a worker does not report.
pub const DEFAULT_LEASE: Duration = Duration::from_secs(60);
