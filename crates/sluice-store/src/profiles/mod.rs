//! [`ProfileStore`]: the profile engine's storage, one sub-trait of
//! [`Store`](crate::Store) (see `docs/personas.md`).
//!
//! # Layout
//! - `computations`: computed-trait and audience definitions. Rows are never
//!   deleted (a deleted definition keeps `deleted_at`), so a key stays taken
//!   for ever.
//! - `profile_jobs`: pending whole-population work on one computation:
//!   `recompute` (diff every profile's value against the stored one, send the
//!   differences to every connected destination) or `backfill` (send every
//!   stored value to one newly connected destination, or one switched on). `after_profile` is the
//!   job's durable position (profiles are walked in id order).
//! - `profiles`: one row per person, the profile document as JSON text (the
//!   store does not read it: identities and traits, rewritten only when they
//!   change) and `next_change_at`, when a time window next changes one of
//!   its values, or when its values must be evaluated again for another
//!   reason (a source-scoped purge removed calls they were built from).
//! - `profile_events`: the person's behavioural calls, one row each,
//!   appended once and never rewritten (keyed by profile, then `(ts, seq)`).
//!   A merge moves rows to the surviving profile; the per-profile cap
//!   deletes the oldest. Kept apart from the document so that an event
//!   costs one small insert rather than a rewrite of everything the person
//!   did before.
//! - `profile_identities`: `user:<id>` / `anon:<id>` → profile id.
//! - `computed_values`: the last value *sent* per (computation, profile);
//!   absent = no value (computed traits) or not a member (audiences).
//! - `profile_scheduled`: window changes prepared ahead of their time, at
//!   most one per (profile, computation): the value from `at` on and the
//!   event seq of its message, whose deliveries are due at `at`. A window
//!   that closes for many people at once would otherwise cost all their
//!   evaluations after it closed; prepared, it costs only the sends.
//! - `computation_sends`: messages put in the outbox per (computation,
//!   destination).
//!
//! # Destinations that receive
//! A step's messages get a delivery (and a count) only for destinations
//! that exist and are enabled when it commits; a message with none is not
//! written (a scheduled change of it is, without a message). Switching a
//! destination on queues, in the same transaction, a `backfill` for it of
//! every live computation connected to it (replacing one still queued)
//! and withdraws their scheduled changes: the first sync of a destination
//! that was sent nothing while it was off.
//! - `profile_engine`: one row per engine partition (one on SQLite, 16
//!   on PostgreSQL, see `postgres/profiles/partitions.rs`): its event
//!   cursor and lease.
//!
//! # Invariants
//! - **One commit per step.** [`ProfileStore::commit_profiles`] writes
//!   profiles, identities, values, the emitted identify messages (events of
//!   source [`PERSONAS_SOURCE`] plus pending deliveries: the same outbox as
//!   ingest) and the advanced cursors or job position in ONE transaction,
//!   and only while the caller holds the leases of the partitions it names
//!   and (where partitions run at once) the profiles and identities it read
//!   are as it read them. A crash before the commit loses
//!   the step entirely (it is redone); after it, nothing is redone.
//! - **Commit order.** [`ProfileStore::profile_events_in`] only returns
//!   events whose writing transaction has ended, and never one at or before
//!   the cursor: SQLite has one writer, so seqs are commit order; PostgreSQL
//!   orders by `(xact, seq)` below the oldest transaction still running
//!   (`pg_snapshot_xmin`), see `postgres/profiles`.
//! - **Scheduled changes are provisional until due.** Before `at` the
//!   stored value is still the current one (reads show it), and a step
//!   that touches the profile withdraws the change (`ProfileCommit::settle`)
//!   and evaluates afresh; so does any change to the computation (its
//!   future changes are dropped and their profiles' `next_change_at` pulled
//!   back to `at`) and the removal of the profile. From `at` on the message
//!   is the delivery engine's, and the value is applied by the next
//!   [`ProfileStore::settle_scheduled`] or settle of the profile.
//! - **No feedback.** The engine's own messages (source [`PERSONAS_SOURCE`])
//!   are returned like any event (so the cursor moves past them) and the
//!   engine skips them.
//!
//! # Recovery
//! Nothing by hand: the lease lapses after its TTL and another node (or the
//! restarted one) takes over at the committed cursor.

mod catalog;
mod types;

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::Result;
pub use catalog::{ComputationPage, DefinitionStore};
pub use types::*;

/// Engine partitions on PostgreSQL: enough for a share on each of up to
/// 16 nodes; few enough that an idle node's rounds stay cheap.
pub const POSTGRES_PARTITIONS: u16 = 16;

/// The source id of identify messages the profile engine emits.
pub const PERSONAS_SOURCE: &str = "personas";

/// Storage of definitions, profiles and the profile engine's progress.
#[async_trait]
pub trait ProfileStore: Send + Sync + 'static {
    // --- definitions (admin API) -------------------------------------------
    /// Saves a definition and queues its first `recompute`. A key used
    /// before, even by a deleted definition, is a `Conflict`.
    async fn create_computation(&self, new: NewComputation) -> Result<Computation>;
    /// Live (not deleted) definitions, oldest first.
    async fn list_computations(&self) -> Result<Vec<Computation>>;
    /// A definition, deleted ones included (`deleted_at` set).
    async fn get_computation(&self, id: &str) -> Result<Option<Computation>>;
    /// Applies `patch` to a live definition. A new definition queues a
    /// `recompute`; each newly connected destination queues a `backfill`.
    async fn update_computation(
        &self,
        id: &str,
        patch: ComputationPatch,
    ) -> Result<Option<Computation>>;
    /// Marks a definition deleted, drops its values and pending jobs.
    async fn delete_computation(&self, id: &str) -> Result<bool>;
    /// Stored values of a computation, by profile id, after `after` (exclusive).
    async fn list_values(
        &self,
        computation_id: &str,
        after: &str,
        limit: u32,
    ) -> Result<Vec<ComputedValue>>;
    /// How many profiles have a stored value (audiences: members).
    async fn count_values(&self, computation_id: &str) -> Result<u64>;
    /// Messages put in the outbox per destination, sorted by destination.
    async fn sends_by_destination(&self, computation_id: &str) -> Result<Vec<(String, u64)>>;

    // --- the engine -----------------------------------------------------------
    /// How many partitions the engine's work is split into: 1 where one
    /// node writes (SQLite), [`POSTGRES_PARTITIONS`] on PostgreSQL.
    fn profile_partitions(&self) -> u16 {
        1
    }
    /// Registers `owner` as an engine node at `now`, renews the partitions
    /// it holds until `now + ttl` and takes or gives up partitions so that
    /// each live engine node holds its share (ceiling of partitions over
    /// engine nodes seen within `ttl`). Returns the partitions `owner` now
    /// holds, with their committed cursors, by id.
    async fn take_profile_partitions(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        ttl: Duration,
    ) -> Result<Vec<Partition>>;
    /// Gives every partition up (shutdown), so another node need not wait.
    async fn release_profile_lease(&self, owner: &str) -> Result<()>;
    /// Committed events after the lowest of the partitions' cursors, in
    /// commit order: about `limit` of the given partitions' own (each
    /// after its partition's cursor), and, marked
    /// [`CursorEvent::elsewhere`], the others' among them.
    async fn profile_events_in(
        &self,
        partitions: Vec<Partition>,
        limit: u32,
    ) -> Result<Vec<CursorEvent>>;
    /// Where the engine has read the Kafka shape's event log `topic` up
    /// to: `(partition, next offset)` of each partition a step committed
    /// ([`ProfileCommit::log`]). Empty where the engine reads the database.
    async fn profile_log_positions(&self, topic: &str) -> Result<Vec<(i32, i64)>> {
        let _ = topic;
        Ok(Vec::new())
    }
    /// Profile ids of the given identities (`user:…`/`anon:…`) that exist.
    async fn resolve_identities(&self, identities: Vec<String>) -> Result<Vec<(String, String)>>;
    /// The stored profiles among `ids`; with `events`, each with its
    /// behavioural events, oldest first.
    async fn load_profiles(&self, ids: Vec<String>, events: bool) -> Result<Vec<ProfileRecord>>;
    /// Stored values of the given profiles.
    async fn values_of(&self, profile_ids: Vec<String>) -> Result<Vec<ComputedValue>>;
    /// Profiles of the given partitions (by a hash of the profile id; all
    /// when empty) whose `next_change_at` is at or before `now`.
    async fn due_profiles_in(
        &self,
        now: DateTime<Utc>,
        limit: u32,
        partitions: Vec<u16>,
    ) -> Result<Vec<String>>;
    /// With their `next_change_at`: profiles of the given partitions (all
    /// when empty) due after `now` and by `until`, without scheduled
    /// changes, soonest first.
    async fn due_ahead_in(
        &self,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
        limit: u32,
        partitions: Vec<u16>,
    ) -> Result<Vec<(String, DateTime<Utc>)>>;
    /// Scheduled changes of the given profiles.
    async fn scheduled_of(&self, profile_ids: Vec<String>) -> Result<Vec<ScheduledChange>>;
    /// Applies up to `limit` scheduled changes due by `now` to the values
    /// and drops them. Returns how many, or `None` (writing nothing) when
    /// `owner` no longer holds the lease.
    async fn settle_scheduled(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        limit: u32,
    ) -> Result<Option<u64>>;
    /// Profile ids in id order after `after` (exclusive).
    async fn profile_ids_after(&self, after: &str, limit: u32) -> Result<Vec<String>>;
    /// The oldest pending job, if any.
    async fn next_profile_job(&self) -> Result<Option<ProfileJob>>;
    /// Commits one engine step atomically (see the module docs). Returns
    /// false, writing nothing, when `commit.owner` no longer holds the lease.
    async fn commit_profiles(&self, commit: ProfileCommit) -> Result<bool>;
    /// How busy ingest and the other writers have kept the store's writer
    /// so far (monotonic; zero where writers do not queue behind one
    /// another). The engine compares two readings to step aside while
    /// others need the writer.
    fn write_load(&self) -> WriteLoad;
}
