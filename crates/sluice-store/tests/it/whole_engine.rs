//! The profile engine as one holder of every partition, the way most store
//! tests drive it: take it all, read from one cursor, sweep everyone.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sluice_store::{CursorEvent, EventCursor, Partition, ProfileStore, Result};

#[async_trait]
pub trait WholeEngine: ProfileStore {
    /// Takes or renews every partition for `owner`: the lowest cursor when
    /// it holds them all.
    async fn take_profile_lease(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        ttl: Duration,
    ) -> Result<Option<EventCursor>> {
        let held = self.take_profile_partitions(owner, now, ttl).await?;
        if held.len() < usize::from(self.profile_partitions()) {
            return Ok(None);
        }
        Ok(held.iter().map(|p| p.cursor).min())
    }

    /// Up to `limit` committed events after `cursor`, every partition at it.
    async fn profile_events_after(
        &self,
        cursor: EventCursor,
        limit: u32,
    ) -> Result<Vec<CursorEvent>> {
        let all = (0..self.profile_partitions())
            .map(|id| Partition { id, cursor })
            .collect();
        self.profile_events_in(all, limit).await
    }

    /// Profiles of every partition due by `now`.
    async fn due_profiles(&self, now: DateTime<Utc>, limit: u32) -> Result<Vec<String>> {
        self.due_profiles_in(now, limit, Vec::new()).await
    }

    /// Profiles of every partition due after `now` and by `until`.
    async fn due_ahead(
        &self,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
        limit: u32,
    ) -> Result<Vec<(String, DateTime<Utc>)>> {
        self.due_ahead_in(now, until, limit, Vec::new()).await
    }
}

impl<T: ProfileStore + ?Sized> WholeEngine for T {}
