//! [`DeliveryStore`]: the delivery engine's side of the outbox. Deliveries
//! are leased (`claim_due`), attempted, and reported; a lease that is not
//! reported ends by itself, so a crashed worker's work is picked up again.
//! The admin API reads the attempt log and replays dead deliveries.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::local::LocalDelivery;
use crate::{Attempt, AttemptReport, DeliveryFilter, DeliveryRecord, DueDelivery, Result};

/// Leasing, reporting and reading deliveries.
#[async_trait]
pub trait DeliveryStore: Send + Sync {
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
    /// Has this store's ingest lease the deliveries it commits to `local`,
    /// this node's engine, up to the room `local` gives, and hand them over
    /// after the commit ([`crate::local`]). False when the store does not:
    /// every delivery is then claimed.
    fn deliver_locally(&self, local: Arc<LocalDelivery>) -> bool {
        let _ = local;
        false
    }
    /// When the earliest pending, unleased delivery falls due, if any.
    async fn next_due(&self) -> Result<Option<DateTime<Utc>>>;
    /// Records attempts and the outcome, and releases the lease. A report
    /// with attempts counts one attempt round and starts the retry window if
    /// it had not started; a report without attempts only hands the delivery
    /// back (for example with `Outcome::Retry` when the worker is saturated).
    async fn report(&self, reports: Vec<AttemptReport>) -> Result<()>;
    async fn list_deliveries(&self, filter: &DeliveryFilter) -> Result<Vec<DeliveryRecord>>;
    /// Puts a call read from an event log into retry state with its first
    /// attempts made (the Kafka shape): `request`'s one call is stored with
    /// a delivery to each destination of `reports`, each carrying its
    /// report as [`DeliveryStore::report`] would record it, all in one
    /// transaction, so the store's dispatcher never sees a delivery
    /// unattempted. The call is not counted in usage (the log's reader
    /// counts it once). Returns false, writing nothing, when the store
    /// already holds the call within the deduplication window: handed off
    /// before a crash and read again. Only PostgreSQL keeps the Kafka
    /// shape's retry state; SQLite refuses.
    async fn hand_off(
        &self,
        request: crate::AppendRequest,
        reports: Vec<(String, AttemptReport)>,
    ) -> Result<bool>;
    async fn get_delivery(&self, id: i64) -> Result<Option<DeliveryRecord>>;
    /// Attempts of one delivery, oldest first.
    async fn list_attempts(&self, delivery_id: i64) -> Result<Vec<Attempt>>;
    /// Enforces the per-destination cap on pending deliveries: for each
    /// destination with more than `cap` pending, the oldest unleased ones are
    /// dead-lettered with a reason naming the cap, until `cap` remain.
    /// Returns how many were dead-lettered, per destination (for a metric
    /// and delivery health); never deletes.
    async fn cap_pending(&self, cap: u64, now: DateTime<Utc>) -> Result<Vec<(String, u64)>>;
    /// Moves dead deliveries matching `filter` (its `state` is ignored) back
    /// to pending, due now, with a fresh retry window. Returns how many.
    async fn replay(&self, filter: &DeliveryFilter, now: DateTime<Utc>) -> Result<u64>;
}
