//! [`ProfileStore`] for [`SqliteStore`]: definitions in
//! `crate::queries::computations`, the
//! engine's reads and its one-transaction step commit in `engine.rs`, a
//! person's behavioural events in `events.rs`.
//! Writes go through the single writer (so a step commits in one
//! transaction, grouped with ingest), reads through the read pool.

pub(super) mod catalog;
mod engine;
pub(super) mod events;
pub(crate) mod scheduled;

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::SqliteStore;
use super::writer::Class;
use crate::queries::computations as q;
use crate::records::now;
use crate::sql::sqlite::{Lite, ready};
use crate::{
    Computation, ComputationPatch, ComputedValue, CursorEvent, NewComputation, Partition,
    ProfileCommit, ProfileJob, ProfileRecord, ProfileStore, Result, ScheduledChange,
};

#[async_trait]
impl ProfileStore for SqliteStore {
    async fn create_computation(&self, new: NewComputation) -> Result<Computation> {
        self.writer
            .run(1, move |c| ready(q::create(&mut Lite(c), new, now())))
            .await
    }

    async fn list_computations(&self) -> Result<Vec<Computation>> {
        self.readers.run(|c| ready(q::list(&Lite(c)))).await
    }

    async fn get_computation(&self, id: &str) -> Result<Option<Computation>> {
        let id = id.to_owned();
        self.readers
            .run(move |c| ready(q::get(&Lite(c), &id)))
            .await
    }

    async fn update_computation(
        &self,
        id: &str,
        patch: ComputationPatch,
    ) -> Result<Option<Computation>> {
        let id = id.to_owned();
        self.writer
            .run(1, move |c| {
                ready(q::update(&mut Lite(c), &id, patch, now()))
            })
            .await
    }

    async fn delete_computation(&self, id: &str) -> Result<bool> {
        let id = id.to_owned();
        self.writer
            .run(1, move |c| ready(q::delete(&mut Lite(c), &id, now())))
            .await
    }

    async fn list_values(
        &self,
        computation_id: &str,
        after: &str,
        limit: u32,
    ) -> Result<Vec<ComputedValue>> {
        let (id, after) = (computation_id.to_owned(), after.to_owned());
        self.readers
            .run(move |c| ready(q::list_values(&Lite(c), &id, &after, limit)))
            .await
    }

    async fn count_values(&self, computation_id: &str) -> Result<u64> {
        let id = computation_id.to_owned();
        self.readers
            .run(move |c| ready(q::count_values(&Lite(c), &id)))
            .await
    }

    async fn sends_by_destination(&self, computation_id: &str) -> Result<Vec<(String, u64)>> {
        let id = computation_id.to_owned();
        self.readers
            .run(move |c| ready(q::sends(&Lite(c), &id)))
            .await
    }

    /// One partition: SQLite has one writer, so the engine is one too.
    async fn take_profile_partitions(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        ttl: Duration,
    ) -> Result<Vec<Partition>> {
        let owner = owner.to_owned();
        let cursor = self
            .writer
            .run_as(Class::Engine, 1, move |c| {
                engine::take_lease(c, &owner, now, ttl)
            })
            .await?;
        Ok(cursor
            .map(|cursor| Partition { id: 0, cursor })
            .into_iter()
            .collect())
    }

    async fn release_profile_lease(&self, owner: &str) -> Result<()> {
        let owner = owner.to_owned();
        self.writer
            .run(1, move |c| engine::release_lease(c, &owner))
            .await
    }

    async fn profile_events_in(
        &self,
        partitions: Vec<Partition>,
        limit: u32,
    ) -> Result<Vec<CursorEvent>> {
        let Some(cursor) = partitions.iter().map(|p| p.cursor).min() else {
            return Ok(Vec::new());
        };
        self.readers
            .run(move |c| engine::events_after(c, cursor, limit))
            .await
    }

    async fn resolve_identities(&self, identities: Vec<String>) -> Result<Vec<(String, String)>> {
        self.readers
            .run(move |c| engine::resolve(c, &identities))
            .await
    }

    async fn load_profiles(&self, ids: Vec<String>, events: bool) -> Result<Vec<ProfileRecord>> {
        self.readers
            .run(move |c| engine::load(c, &ids, events))
            .await
    }

    async fn values_of(&self, profile_ids: Vec<String>) -> Result<Vec<ComputedValue>> {
        self.readers
            .run(move |c| ready(crate::queries::engine::values_of(&Lite(c), &profile_ids)))
            .await
    }

    async fn due_profiles_in(
        &self,
        now: DateTime<Utc>,
        limit: u32,
        _partitions: Vec<u16>,
    ) -> Result<Vec<String>> {
        self.readers.run(move |c| engine::due(c, now, limit)).await
    }

    async fn due_ahead_in(
        &self,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
        limit: u32,
        _partitions: Vec<u16>,
    ) -> Result<Vec<(String, DateTime<Utc>)>> {
        let (now, until) = (now.timestamp_millis(), until.timestamp_millis());
        self.readers
            .run(move |c| scheduled::due_ahead(c, now, until, limit))
            .await
    }

    async fn scheduled_of(&self, profile_ids: Vec<String>) -> Result<Vec<ScheduledChange>> {
        self.readers
            .run(move |c| {
                let mut out = Vec::new();
                for id in &profile_ids {
                    out.extend(scheduled::of(c, id)?);
                }
                Ok(out)
            })
            .await
    }

    async fn settle_scheduled(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        limit: u32,
    ) -> Result<Option<u64>> {
        // Most rounds find nothing due: ask a reader, not the writer.
        let due = self
            .readers
            .run(move |c| scheduled::any_due(c, now.timestamp_millis()))
            .await?;
        if !due {
            return Ok(Some(0));
        }
        let owner = owner.to_owned();
        self.writer
            .run_as(Class::Engine, limit as usize, move |c| {
                if !engine::holds(c, &owner)? {
                    return Ok(None);
                }
                scheduled::settle_due(c, now.timestamp_millis(), limit).map(Some)
            })
            .await
    }

    async fn profile_ids_after(&self, after: &str, limit: u32) -> Result<Vec<String>> {
        let after = after.to_owned();
        self.readers
            .run(move |c| ready(crate::queries::engine::ids_after(&Lite(c), &after, limit)))
            .await
    }

    async fn next_profile_job(&self) -> Result<Option<ProfileJob>> {
        self.readers
            .run(|c| ready(crate::queries::engine::next_job(&Lite(c))))
            .await
    }

    async fn commit_profiles(&self, commit: ProfileCommit) -> Result<bool> {
        if commit.log.is_some() {
            // The Kafka shape keeps its state in PostgreSQL.
            return Err(crate::StoreError::internal(
                "the event log's positions are kept only on PostgreSQL",
            ));
        }
        let weight = commit.messages.len() + commit.profiles.len() + commit.events.len() / 4;
        let stored: Vec<_> = commit
            .events
            .iter()
            .map(|(_, e)| super::bodies::encode(&e.properties))
            .collect();
        self.writer
            .run_as(Class::Engine, weight, move |c| {
                engine::commit(c, &commit, &stored)
            })
            .await
    }

    fn write_load(&self) -> crate::WriteLoad {
        self.writer.load()
    }
}
