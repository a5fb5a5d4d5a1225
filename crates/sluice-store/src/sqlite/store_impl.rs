//! The [`Store`](crate::Store) sub-traits for [`SqliteStore`]: writes go to the writer thread, reads to
//! the read pool. Each method is a thin hop to the function doing the work.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use rusqlite::Connection;

use super::writer::Class;
use super::{SqliteStore, bodies, dedup, delivery, ingest, message_ids, prune, source_blocks};
use crate::local::Taken;
use crate::queries::{deliveries, destinations, sources};
use crate::records::{PRUNE_CHUNK, now};
use crate::sql::sqlite::{Lite, ready};
use crate::{
    AppendRequest, Appended, Attempt, AttemptReport, CatalogStore, DeliveryFilter, DeliveryRecord,
    DeliveryStore, Destination, DestinationPatch, DueDelivery, EventStore, NewDestination,
    NewSource, Result, Source, SourcePatch, StoredEvent, UsageDay,
};

#[async_trait]
impl CatalogStore for SqliteStore {
    async fn get_meta(&self, key: &str) -> Result<Option<String>> {
        let key = key.to_owned();
        self.readers
            .run(move |c| ready(sources::get_meta(&Lite(c), &key)))
            .await
    }

    async fn put_meta_if_absent(&self, key: &str, value: &str) -> Result<String> {
        let (key, value) = (key.to_owned(), value.to_owned());
        self.writer
            .run(1, move |c| {
                ready(sources::put_meta_if_absent(&Lite(c), &key, &value))
            })
            .await
    }

    async fn revoke_session(&self, id: &str, expires_at: i64, now: i64) -> Result<()> {
        let id = id.to_owned();
        self.writer
            .run(1, move |c| {
                ready(sources::revoke_session(&Lite(c), &id, expires_at, now))
            })
            .await
    }

    async fn session_revoked(&self, id: &str) -> Result<bool> {
        let id = id.to_owned();
        self.readers
            .run(move |c| ready(sources::session_revoked(&Lite(c), &id)))
            .await
    }

    async fn create_source(&self, new: NewSource) -> Result<Source> {
        self.writer
            .run(1, move |c| {
                ready(sources::create_source(&Lite(c), new, now()))
            })
            .await
    }

    async fn list_sources(&self) -> Result<Vec<Source>> {
        self.readers
            .run(|c| ready(sources::list_sources(&Lite(c))))
            .await
    }

    async fn get_source(&self, id: &str) -> Result<Option<Source>> {
        let id = id.to_owned();
        self.readers
            .run(move |c| ready(sources::get_source(&Lite(c), &id)))
            .await
    }

    async fn get_source_by_key_hash(&self, hash: &str) -> Result<Option<Source>> {
        let hash = hash.to_owned();
        self.readers
            .run(move |c| ready(sources::get_source_by_key_hash(&Lite(c), &hash)))
            .await
    }

    async fn update_source(&self, id: &str, patch: SourcePatch) -> Result<Option<Source>> {
        let id = id.to_owned();
        self.writer
            .run(1, move |c| {
                ready(sources::update_source(&mut Lite(c), &id, patch, now()))
            })
            .await
    }

    async fn delete_source(&self, id: &str) -> Result<bool> {
        let id = id.to_owned();
        self.writer
            .run(1, move |c| ready(sources::delete_source(&mut Lite(c), &id)))
            .await
    }

    async fn create_destination(&self, new: NewDestination) -> Result<Destination> {
        self.writer
            .run(1, move |c| {
                ready(destinations::create_destination(&mut Lite(c), new, now()))
            })
            .await
    }

    async fn list_destinations(&self) -> Result<Vec<Destination>> {
        self.readers
            .run(|c| ready(destinations::list_destinations(&mut Lite(c))))
            .await
    }

    async fn get_destination(&self, id: &str) -> Result<Option<Destination>> {
        let id = id.to_owned();
        self.readers
            .run(move |c| ready(destinations::get_destination(&mut Lite(c), &id)))
            .await
    }

    async fn update_destination(
        &self,
        id: &str,
        patch: DestinationPatch,
    ) -> Result<Option<Destination>> {
        let id = id.to_owned();
        self.writer
            .run(1, move |c| {
                ready(destinations::update_destination(
                    &mut Lite(c),
                    &id,
                    patch,
                    now(),
                ))
            })
            .await
    }

    async fn delete_destination(&self, id: &str) -> Result<bool> {
        let id = id.to_owned();
        self.writer
            .run(1, move |c| {
                ready(destinations::delete_destination(&mut Lite(c), &id, now()))
            })
            .await
    }
}

#[async_trait]
impl EventStore for SqliteStore {
    async fn append(&self, request: AppendRequest) -> Result<Appended> {
        let weight = ingest::weight(&request);
        let stored: Vec<_> = request
            .events
            .iter()
            .map(|e| bodies::encode(&e.body))
            .collect();
        // Hashed here, off the single writer thread.
        let keys: Vec<u64> = self.keyer.map_or_else(Vec::new, |keyer| {
            request
                .events
                .iter()
                .map(|e| keyer.key(&request.source_id, &e.message_id))
                .collect()
        });
        let window = self.window.clone();
        let local = self.local.get().cloned();
        let work = move |c: &rusqlite::Connection| {
            let mut window = window.as_ref().map(dedup::lock);
            let window = window.as_deref_mut();
            ingest::append(c, &request, &stored, &keys, window, local.as_ref())
        };
        // Handed over on the writer thread as soon as the group commits,
        // even when the caller has stopped waiting (a request that timed
        // out): otherwise the leased deliveries would wait for their lease.
        let (appended, _) = self
            .writer
            .run_as_then(Class::Ingest, weight, work, |(_, leased)| {
                // Any the engine stopped before taking are the last of a
                // stopping process: the next open clears every lease.
                let _ = std::mem::replace(leased, Taken::none()).hand();
            })
            .await?;
        Ok(appended)
    }

    async fn recent_events(
        &self,
        source_id: &str,
        before_seq: Option<i64>,
        limit: u32,
    ) -> Result<Vec<StoredEvent>> {
        let source_id = source_id.to_owned();
        self.readers
            .run(move |c| source_blocks::recent_events(c, &source_id, before_seq, limit))
            .await
    }

    async fn usage(&self, source_id: &str, from: &str, to: &str) -> Result<Vec<UsageDay>> {
        let (source_id, from, to) = (source_id.to_owned(), from.to_owned(), to.to_owned());
        self.readers
            .run(move |c| {
                ready(crate::queries::source_schema::usage(
                    &Lite(c),
                    &source_id,
                    &from,
                    &to,
                ))
            })
            .await
    }

    /// Runs as a series of small transactions (each atomic) so a large
    /// backlog does not stall ingest; an interrupted prune resumes cleanly.
    async fn prune(&self, before: DateTime<Utc>) -> Result<u64> {
        let mut total = 0;
        loop {
            let deleted = self
                .writer
                .run(PRUNE_CHUNK as usize, move |c| {
                    prune::prune_chunk(c, before, PRUNE_CHUNK)
                })
                .await?;
            total += deleted;
            if deleted < u64::from(PRUNE_CHUNK) {
                return Ok(total);
            }
        }
    }
}

#[async_trait]
impl DeliveryStore for SqliteStore {
    async fn claim_due(
        &self,
        now: DateTime<Utc>,
        limit: u32,
        lease: Duration,
    ) -> Result<Vec<DueDelivery>> {
        let weight = usize::try_from(limit).unwrap_or(usize::MAX);
        self.writer
            .run(weight, move |c| delivery::claim_due(c, now, limit, lease))
            .await
    }

    fn deliver_locally(&self, local: std::sync::Arc<crate::local::LocalDelivery>) -> bool {
        self.local.set(local).is_ok()
    }

    async fn next_due(&self) -> Result<Option<DateTime<Utc>>> {
        self.readers.run(delivery::next_due).await
    }

    async fn report(&self, reports: Vec<AttemptReport>) -> Result<()> {
        let weight = reports.len();
        self.writer
            .run(weight, move |c| delivery::report(c, &reports))
            .await
    }

    async fn hand_off(
        &self,
        _request: AppendRequest,
        _reports: Vec<(String, AttemptReport)>,
    ) -> Result<bool> {
        // The Kafka shape keeps its retry state in PostgreSQL.
        Err(crate::StoreError::internal(
            "calls from an event log are handed off only on PostgreSQL",
        ))
    }

    async fn list_deliveries(&self, filter: &DeliveryFilter) -> Result<Vec<DeliveryRecord>> {
        let filter = filter.clone();
        self.readers
            .run(move |c| {
                let seqs = message_seqs(c, &filter)?;
                ready(deliveries::list_deliveries(
                    &Lite(c),
                    &filter,
                    seqs.as_deref(),
                ))
            })
            .await
    }

    async fn get_delivery(&self, id: i64) -> Result<Option<DeliveryRecord>> {
        self.readers
            .run(move |c| ready(deliveries::get_delivery(&Lite(c), id)))
            .await
    }

    async fn list_attempts(&self, delivery_id: i64) -> Result<Vec<Attempt>> {
        self.readers
            .run(move |c| ready(deliveries::list_attempts(&Lite(c), delivery_id)))
            .await
    }

    /// Counts on a reader; only destinations over the cap cost a write.
    async fn cap_pending(&self, cap: u64, now: DateTime<Utc>) -> Result<Vec<(String, u64)>> {
        let over = self
            .readers
            .run(move |c| ready(deliveries::over_cap(&Lite(c), cap)))
            .await?;
        let mut capped = Vec::new();
        for (destination, count) in over {
            let id = destination.clone();
            let changed = self
                .writer
                .run(1, move |c| {
                    ready(deliveries::dead_letter_over_cap(
                        &Lite(c),
                        &id,
                        count,
                        cap,
                        now,
                    ))
                })
                .await?;
            if changed > 0 {
                capped.push((destination, changed));
            }
        }
        Ok(capped)
    }

    async fn replay(&self, filter: &DeliveryFilter, now: DateTime<Utc>) -> Result<u64> {
        let filter = filter.clone();
        self.writer
            .run(1, move |c| {
                let seqs = message_seqs(c, &filter)?;
                ready(deliveries::replay(&Lite(c), &filter, seqs.as_deref(), now))
            })
            .await
    }
}

/// The events a filter's message id names, found through the per-block
/// filters (SQLite has no index on `events.message_id`; see `message_ids`).
fn message_seqs(conn: &Connection, filter: &DeliveryFilter) -> Result<Option<Vec<i64>>> {
    filter
        .message_id
        .as_deref()
        .map(|id| message_ids::seqs(conn, id))
        .transpose()
}
