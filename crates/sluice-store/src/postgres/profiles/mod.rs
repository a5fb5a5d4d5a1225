//! [`ProfileStore`] for [`PostgresStore`]: definitions in
//! `crate::queries::computations`, the
//! engine's reads and its one-transaction step commit in `engine.rs`, a
//! person's behavioural events in `events.rs`, window changes prepared
//! ahead of their time in `scheduled.rs`.

pub(super) mod catalog;
mod commit;
mod engine;
pub(super) mod events;
mod outbox;
pub(super) mod partitions;
pub(crate) mod scheduled;

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::PostgresStore;
use super::rows::backend;
use crate::queries::computations as q;
use crate::records::now;
use crate::{
    Computation, ComputationPatch, ComputedValue, CursorEvent, NewComputation, Partition,
    ProfileCommit, ProfileJob, ProfileRecord, ProfileStore, Result, ScheduledChange,
};

#[async_trait]
impl ProfileStore for PostgresStore {
    async fn create_computation(&self, new: NewComputation) -> Result<Computation> {
        q::create(&mut self.db().await?, new, now()).await
    }

    async fn list_computations(&self) -> Result<Vec<Computation>> {
        q::list(&self.db().await?).await
    }

    async fn get_computation(&self, id: &str) -> Result<Option<Computation>> {
        q::get(&self.db().await?, id).await
    }

    async fn update_computation(
        &self,
        id: &str,
        patch: ComputationPatch,
    ) -> Result<Option<Computation>> {
        q::update(&mut self.db().await?, id, patch, now()).await
    }

    async fn delete_computation(&self, id: &str) -> Result<bool> {
        q::delete(&mut self.db().await?, id, now()).await
    }

    async fn list_values(
        &self,
        computation_id: &str,
        after: &str,
        limit: u32,
    ) -> Result<Vec<ComputedValue>> {
        q::list_values(&self.db().await?, computation_id, after, limit).await
    }

    async fn count_values(&self, computation_id: &str) -> Result<u64> {
        q::count_values(&self.db().await?, computation_id).await
    }

    async fn sends_by_destination(&self, computation_id: &str) -> Result<Vec<(String, u64)>> {
        q::sends(&self.db().await?, computation_id).await
    }

    fn profile_partitions(&self) -> u16 {
        crate::POSTGRES_PARTITIONS
    }

    async fn take_profile_partitions(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        ttl: Duration,
    ) -> Result<Vec<Partition>> {
        partitions::take(&mut self.client().await?, owner, now, ttl).await
    }

    async fn release_profile_lease(&self, owner: &str) -> Result<()> {
        partitions::release(&self.client().await?, owner).await
    }

    async fn profile_events_in(
        &self,
        partitions: Vec<Partition>,
        limit: u32,
    ) -> Result<Vec<CursorEvent>> {
        partitions::events_in(&self.client().await?, &partitions, limit).await
    }

    async fn profile_log_positions(&self, topic: &str) -> Result<Vec<(i32, i64)>> {
        partitions::log_positions(&self.client().await?, topic).await
    }

    async fn resolve_identities(&self, identities: Vec<String>) -> Result<Vec<(String, String)>> {
        engine::resolve(&self.client().await?, &identities).await
    }

    async fn load_profiles(&self, ids: Vec<String>, events: bool) -> Result<Vec<ProfileRecord>> {
        engine::load(&self.client().await?, &ids, events).await
    }

    async fn values_of(&self, profile_ids: Vec<String>) -> Result<Vec<ComputedValue>> {
        crate::queries::engine::values_of(&self.db().await?, &profile_ids).await
    }

    async fn due_profiles_in(
        &self,
        now: DateTime<Utc>,
        limit: u32,
        partitions: Vec<u16>,
    ) -> Result<Vec<String>> {
        engine::due(&self.client().await?, now, limit, &partitions).await
    }

    async fn due_ahead_in(
        &self,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
        limit: u32,
        partitions: Vec<u16>,
    ) -> Result<Vec<(String, DateTime<Utc>)>> {
        scheduled::due_ahead(&self.client().await?, now, until, limit, &partitions).await
    }

    async fn scheduled_of(&self, profile_ids: Vec<String>) -> Result<Vec<ScheduledChange>> {
        scheduled::of(&self.client().await?, &profile_ids).await
    }

    async fn settle_scheduled(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        limit: u32,
    ) -> Result<Option<u64>> {
        let mut client = self.client().await?;
        // Most rounds find nothing due: no transaction, no engine row lock.
        if !scheduled::any_due(&client, now).await? {
            return Ok(Some(0));
        }
        let tx = client.transaction().await.map_err(backend)?;
        // Partition 0 settles scheduled changes for everyone.
        if !partitions::hold(&tx, owner, &[0]).await? {
            return Ok(None);
        }
        let settled = scheduled::settle_due(&tx, now, limit).await?;
        tx.commit().await.map_err(backend)?;
        Ok(Some(settled))
    }

    async fn profile_ids_after(&self, after: &str, limit: u32) -> Result<Vec<String>> {
        crate::queries::engine::ids_after(&self.db().await?, after, limit).await
    }

    async fn next_profile_job(&self) -> Result<Option<ProfileJob>> {
        crate::queries::engine::next_job(&self.db().await?).await
    }

    async fn commit_profiles(&self, commit: ProfileCommit) -> Result<bool> {
        engine::commit(&mut self.client().await?, &commit).await
    }

    /// PostgreSQL takes writes from many connections at once, so there is
    /// no single writer whose busy time could be measured (`foreground`
    /// stays zero). Ingest's events are counted: the engine's steps still
    /// share the server's CPU and disk with ingest, and on a small machine
    /// the same cores. Each node counts its own ingest.
    fn write_load(&self) -> crate::WriteLoad {
        crate::WriteLoad {
            events: self.writer.ingested(),
            foreground: std::time::Duration::ZERO,
        }
    }
}
