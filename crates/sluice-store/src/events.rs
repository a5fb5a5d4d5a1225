//! [`EventStore`]: the commit path and what reads it. `append` is the one
//! write on ingest's path: events, their pending deliveries (the outbox) and
//! usage counts in one transaction, acknowledged only once durable.
//! Retention removes events whose deliveries are all finished.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::{AppendRequest, Appended, Result, StoredEvent, UsageDay};

/// Stored events, usage counters and retention.
#[async_trait]
pub trait EventStore: Send + Sync {
    // --- ingest -------------------------------------------------------------
    /// Commits each request's events, their pending deliveries (due now) and
    /// usage counts. Concurrent callers are grouped into one transaction.
    /// An event whose `messageId` its source already committed within the
    /// deduplication window (or earlier in the same request) is dropped and
    /// counted, not stored.
    async fn append(&self, request: AppendRequest) -> Result<Appended>;
    /// A source's events, newest first; `before_seq` is an exclusive cursor.
    async fn recent_events(
        &self,
        source_id: &str,
        before_seq: Option<i64>,
        limit: u32,
    ) -> Result<Vec<StoredEvent>>;
    /// Usage counters for a source, oldest day first, days in `[from, to]`.
    async fn usage(&self, source_id: &str, from: &str, to: &str) -> Result<Vec<UsageDay>>;

    // --- retention ----------------------------------------------------------
    /// Deletes events received before `before` whose deliveries are all
    /// finished (not pending), with their deliveries and attempts; returns
    /// how many events were deleted. Pending work is never pruned.
    async fn prune(&self, before: DateTime<Utc>) -> Result<u64>;
}

/// Where ingest appends accepted calls: the store itself on SQLite and on
/// PostgreSQL (events and their outbox in one commit, [`StoreLog`]), or a
/// Kafka topic in the Kafka shape. Either way the call is answered `200`
/// only once `append` returns, and a transient error is a `503`.
#[async_trait]
pub trait EventLog: Send + Sync {
    /// Appends a request's events, durably; see [`EventStore::append`].
    async fn append(&self, request: AppendRequest) -> Result<Appended>;

    /// A source's newest calls for the debugger, when this log keeps them
    /// apart from the store (as [`EventStore::recent_events`] answers);
    /// `None` when the store holds them.
    async fn recent(
        &self,
        _source_id: &str,
        _before_seq: Option<i64>,
        _limit: u32,
    ) -> Result<Option<Vec<StoredEvent>>> {
        Ok(None)
    }
}

/// The store as the event log: [`EventStore::append`].
pub struct StoreLog(pub std::sync::Arc<dyn crate::Store>);

#[async_trait]
impl EventLog for StoreLog {
    async fn append(&self, request: AppendRequest) -> Result<Appended> {
        self.0.append(request).await
    }
}
