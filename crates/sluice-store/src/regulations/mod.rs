//! [`RegulationStore`]: user deletion and suppression, one sub-trait of
//! [`Store`](crate::Store) (see `docs/privacy.md`).
//!
//! # Layout
//! - `regulations`: one row per request (type, scope, status).
//! - `regulation_subjects`: the user ids of a regulation, each with `done`,
//!   the affected sources found and how many events were purged. A subject
//!   row is the job's durable position: a done subject is never redone.
//! - `regulation_notifications`: the delete notifications created, each the
//!   id of a delivery in the outbox (its state is read from `deliveries`),
//!   one per subject and destination, with the affected sources that reach
//!   the destination (`source_ids`, added by a later migration; `NULL` in
//!   older rows) and the one it is filed under (`source_id`).
//! - `suppressions`: suppressed user ids. A lifted suppression keeps its row
//!   (`active = 0`) so that nodes polling by `version` see the change.
//!   `version` is taken from a counter bumped under the writer's lock
//!   (SQLite: one writer; PostgreSQL: a transaction-scoped advisory lock), so
//!   versions become visible in order and a poller never skips one.
//! - `usage_suppressed`: suppressed events per source and UTC day.
//! - `regulation_engine`: one row holding the job lease.
//! - `regulations.error` (version 5): why a regulation is `FAILED`.
//!
//! # Invariants
//! - **Suppression with the request.** Creating a regulation writes its
//!   suppression changes in the same transaction, so the request's answer
//!   means every node will block the ids within its poll interval.
//! - **One commit per step.** [`RegulationStore::commit_regulation`] deletes
//!   the subjects' events, their deliveries and attempts, their profiles,
//!   identities and computed values, writes the delete notifications (events
//!   of source [`PRIVACY_SOURCE`] plus pending deliveries: the outbox the
//!   delivery engine reads) and marks the subjects done, in ONE transaction,
//!   only while the caller holds the lease. Crash before: the step is redone
//!   from scratch; after: never redone. So a notification is created once.
//!   A source-scoped step keeps the profiles, strips the source from them
//!   and, in the same transaction, makes each due for evaluation at the
//!   step's time (`next_change_at`): the profile engine's sweep picks them
//!   up and recomputes their values from what is left. The job never calls
//!   the engine; the mark is its only, durable, message to it.
//! - Notification events are never matched as the subject's data.
//! - **No profile commit across a purge.** While it purges, the job holds
//!   the profile engine's lease ([`RegulationStore::seize_profile_lease`]):
//!   an engine step that read a subject's events or profile before the
//!   purge is refused at its commit (it no longer holds the lease) and is
//!   redone from its cursor afterwards, on data without the subject. So the
//!   engine never re-creates a purged profile nor emits an identify about a
//!   purged user from stale reads.
//! - `FAILED` is final, like `FINISHED`: subjects done before stay done,
//!   the others are left as they are (nothing is rolled back).
//!
//! # Recovery
//! Nothing by hand: the lease lapses after its TTL and another node (or the
//! restarted one) continues with the subjects not yet done.

mod shared;
mod types;

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::Result;
pub(crate) use shared::{
    delete_notification, identity_parts, notices, pseudonym, source_ids, subject_index,
};
pub use types::*;

/// The source id of delete notifications (never an affected source).
pub const PRIVACY_SOURCE: &str = "privacy";

/// Storage of regulations, suppressions and the regulation job's progress.
#[async_trait]
pub trait RegulationStore: Send + Sync + 'static {
    // --- admin API ----------------------------------------------------------
    /// Saves a regulation (status `INITIALIZED`) and its subjects, and applies
    /// its suppression change, in one transaction. A regulation without
    /// purge work is saved `FINISHED`.
    async fn create_regulation(&self, new: NewRegulation) -> Result<Regulation>;
    /// Regulations, newest first; with `before`, those older than the
    /// regulation of that id (none when there is no such regulation).
    async fn list_regulations(&self, limit: u32, before: Option<&str>) -> Result<Vec<Regulation>>;
    async fn get_regulation(&self, id: &str) -> Result<Option<RegulationDetail>>;
    /// Active suppressions in id order after `after` (exclusive).
    async fn list_suppressions(&self, after: &str, limit: u32) -> Result<Vec<String>>;
    /// Suppression changes with a version above `version`, oldest first.
    async fn suppression_changes(&self, version: i64, limit: u32)
    -> Result<Vec<SuppressionChange>>;
    /// Adds suppressed-event counts (flushed by ingest nodes).
    async fn add_suppressed(&self, counts: Vec<SuppressedCount>) -> Result<()>;
    /// Suppressed-event counts of a source, days in `[from, to]`.
    async fn suppressed_usage(
        &self,
        source_id: &str,
        from: &str,
        to: &str,
    ) -> Result<Vec<SuppressedCount>>;

    // --- the job --------------------------------------------------------------
    /// Takes or renews the job lease for `owner` until `now + ttl`.
    async fn take_regulation_lease(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        ttl: Duration,
    ) -> Result<bool>;
    /// Gives the lease up (shutdown), so another node need not wait.
    async fn release_regulation_lease(&self, owner: &str) -> Result<()>;
    /// The oldest regulation not finished, with up to `limit` subjects not
    /// yet done.
    async fn next_regulation(&self, limit: u32) -> Result<Option<(Regulation, Vec<String>)>>;
    /// For each user id (in order): the profiles linked to it and the events
    /// (outside [`PRIVACY_SOURCE`], limited to `source_id` when given)
    /// carrying the user id or any identity of those profiles as `userId`,
    /// `anonymousId` or `previousId`. One pass over the events for all ids.
    async fn find_subject_data(
        &self,
        user_ids: Vec<String>,
        source_id: Option<String>,
    ) -> Result<Vec<SubjectData>>;
    /// Commits one step (see the module docs). Returns false, writing
    /// nothing, when `commit.owner` no longer holds the lease. A step with
    /// subjects leaves the regulation `RUNNING`; a step without subjects
    /// marks it `FINISHED` when no subject is left, so `FINISHED` is only
    /// seen once every purge step has fully returned (SQLite: including
    /// its WAL checkpoint).
    async fn commit_regulation(&self, commit: RegulationCommit) -> Result<bool>;
    /// Marks an unfinished regulation `FAILED` with `error`, only while
    /// `owner` holds the job lease. Returns false, writing nothing, when
    /// `owner` does not hold it or the regulation is already over.
    async fn fail_regulation(
        &self,
        owner: &str,
        id: &str,
        error: &str,
        now: DateTime<Utc>,
    ) -> Result<bool>;
    /// Takes the profile engine's lease for `owner` (the job's owner name)
    /// until `now + ttl`, whoever holds it: the engine's next commit is
    /// refused and it stays idle until the job releases the lease with
    /// [`ProfileStore::release_profile_lease`](crate::ProfileStore::release_profile_lease)
    /// or it lapses. Returns whether `owner` already held it unexpired, so
    /// that the job knows no engine step committed since it last checked.
    async fn seize_profile_lease(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        ttl: Duration,
    ) -> Result<bool>;
}

/// Statuses of a regulation.
pub mod status {
    pub const INITIALIZED: &str = "INITIALIZED";
    pub const RUNNING: &str = "RUNNING";
    pub const FINISHED: &str = "FINISHED";
    pub const FAILED: &str = "FAILED";
}
