//! The [`Store`](crate::Store) sub-traits for [`PostgresStore`]: appends go to the group-commit writer;
//! everything else takes a pooled connection. Each method is a thin hop to
//! the function doing the work.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::{PostgresStore, delivery, ingest};
use crate::local::LocalDelivery;
use crate::queries::deliveries::{self, Spare};
use crate::queries::{destinations, sources};
use crate::records::{PRUNE_CHUNK, now};
use crate::{
    AppendRequest, Appended, Attempt, AttemptReport, CatalogStore, DeliveryFilter, DeliveryRecord,
    DeliveryStore, Destination, DestinationPatch, DueDelivery, EventStore, NewDestination,
    NewSource, Result, Source, SourcePatch, StoredEvent, UsageDay,
};

#[async_trait]
impl CatalogStore for PostgresStore {
    async fn get_meta(&self, key: &str) -> Result<Option<String>> {
        sources::get_meta(&self.db().await?, key).await
    }

    async fn put_meta_if_absent(&self, key: &str, value: &str) -> Result<String> {
        sources::put_meta_if_absent(&self.db().await?, key, value).await
    }

    async fn revoke_session(&self, id: &str, expires_at: i64, now: i64) -> Result<()> {
        sources::revoke_session(&self.db().await?, id, expires_at, now).await
    }

    async fn session_revoked(&self, id: &str) -> Result<bool> {
        sources::session_revoked(&self.db().await?, id).await
    }

    async fn create_source(&self, new: NewSource) -> Result<Source> {
        sources::create_source(&self.db().await?, new, now()).await
    }

    async fn list_sources(&self) -> Result<Vec<Source>> {
        sources::list_sources(&self.db().await?).await
    }

    async fn get_source(&self, id: &str) -> Result<Option<Source>> {
        sources::get_source(&self.db().await?, id).await
    }

    async fn get_source_by_key_hash(&self, hash: &str) -> Result<Option<Source>> {
        sources::get_source_by_key_hash(&self.db().await?, hash).await
    }

    async fn update_source(&self, id: &str, patch: SourcePatch) -> Result<Option<Source>> {
        sources::update_source(&mut self.db().await?, id, patch, now()).await
    }

    async fn delete_source(&self, id: &str) -> Result<bool> {
        let deleted = sources::delete_source(&mut self.db().await?, id).await?;
        // The source is gone whatever happens here: a failure leaves only
        // counter rows nobody reads, so it is logged, not answered.
        if deleted && let Err(e) = super::usage_feed::forget_source(&self.pool, id).await {
            tracing::warn!(error = %e, source = id, "clearing a deleted source's usage");
        }
        Ok(deleted)
    }

    async fn create_destination(&self, new: NewDestination) -> Result<Destination> {
        destinations::create_destination(&mut self.db().await?, new, now()).await
    }

    async fn list_destinations(&self) -> Result<Vec<Destination>> {
        destinations::list_destinations(&mut self.db().await?).await
    }

    async fn get_destination(&self, id: &str) -> Result<Option<Destination>> {
        destinations::get_destination(&mut self.db().await?, id).await
    }

    async fn update_destination(
        &self,
        id: &str,
        patch: DestinationPatch,
    ) -> Result<Option<Destination>> {
        destinations::update_destination(&mut self.db().await?, id, patch, now()).await
    }

    async fn delete_destination(&self, id: &str) -> Result<bool> {
        destinations::delete_destination(&mut self.db().await?, id, now()).await
    }
}

#[async_trait]
impl EventStore for PostgresStore {
    async fn append(&self, request: AppendRequest) -> Result<Appended> {
        self.writer.append(request).await
    }

    async fn recent_events(
        &self,
        source_id: &str,
        before_seq: Option<i64>,
        limit: u32,
    ) -> Result<Vec<StoredEvent>> {
        ingest::recent_events(&self.client().await?, source_id, before_seq, limit).await
    }

    async fn usage(&self, source_id: &str, from: &str, to: &str) -> Result<Vec<UsageDay>> {
        crate::queries::source_schema::usage(&self.db().await?, source_id, from, to).await
    }

    /// Runs as a series of small transactions (each atomic) so a large
    /// backlog never holds locks for long; an interrupted prune resumes cleanly.
    async fn prune(&self, before: DateTime<Utc>) -> Result<u64> {
        let mut total = 0;
        loop {
            let mut db = self.db().await?;
            let chunk =
                deliveries::prune_chunk(&mut db, before, PRUNE_CHUNK, Spare::default()).await?;
            total += chunk.deleted;
            if chunk.taken < PRUNE_CHUNK as usize {
                return Ok(total);
            }
        }
    }
}

#[async_trait]
impl DeliveryStore for PostgresStore {
    async fn claim_due(
        &self,
        now: DateTime<Utc>,
        limit: u32,
        lease: Duration,
    ) -> Result<Vec<DueDelivery>> {
        let due = delivery::claim_due(&self.client().await?, &self.node, now, limit, lease).await?;
        self.vacuum.after_claim(&self.pool, due.len(), limit);
        Ok(due)
    }

    fn deliver_locally(&self, local: Arc<LocalDelivery>) -> bool {
        self.rowless.set_lease(local.lease());
        self.writer.deliver_locally(local)
    }

    async fn next_due(&self) -> Result<Option<DateTime<Utc>>> {
        delivery::next_due(&self.client().await?).await
    }

    async fn report(&self, reports: Vec<AttemptReport>) -> Result<()> {
        delivery::report(
            &mut self.client().await?,
            &self.node,
            &reports,
            &self.rowless,
        )
        .await?;
        self.vacuum.settled(reports.len());
        Ok(())
    }

    async fn list_deliveries(&self, filter: &DeliveryFilter) -> Result<Vec<DeliveryRecord>> {
        deliveries::list_deliveries(&self.db().await?, filter, None).await
    }

    async fn hand_off(
        &self,
        request: AppendRequest,
        reports: Vec<(String, AttemptReport)>,
    ) -> Result<bool> {
        let settled = reports.len();
        let stored = self.hand_offs.hand_off(request, reports).await?;
        if stored {
            self.vacuum.settled(settled);
        }
        Ok(stored)
    }

    async fn get_delivery(&self, id: i64) -> Result<Option<DeliveryRecord>> {
        deliveries::get_delivery(&self.db().await?, id).await
    }

    async fn list_attempts(&self, delivery_id: i64) -> Result<Vec<Attempt>> {
        deliveries::list_attempts(&self.db().await?, delivery_id).await
    }

    async fn cap_pending(&self, cap: u64, now: DateTime<Utc>) -> Result<Vec<(String, u64)>> {
        let db = self.db().await?;
        let mut capped = Vec::new();
        for (destination, count) in deliveries::over_cap(&db, cap).await? {
            let changed =
                deliveries::dead_letter_over_cap(&db, &destination, count, cap, now).await?;
            if changed > 0 {
                capped.push((destination, changed));
            }
        }
        Ok(capped)
    }

    async fn replay(&self, filter: &DeliveryFilter, now: DateTime<Utc>) -> Result<u64> {
        deliveries::replay(&self.db().await?, filter, None, now).await
    }
}
