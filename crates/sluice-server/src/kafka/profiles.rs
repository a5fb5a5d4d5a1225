//! The profile engine's calls in the Kafka shape: read from the topic by
//! [`TopicFeed`], at the positions the engine's steps commit in PostgreSQL
//! with the profiles (see `sluice_profiles::engine::feed`).
//!
//! The feed joins no consumer group: which node reads a partition is
//! decided by the engine's leases in the store, which also fence a node
//! that lost one (its commit is refused), and positions live beside the
//! state they describe, so a step is applied exactly once. The delivery
//! consumer's group is not involved, so neither slows the other.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use chrono::{DateTime, Utc};
use sluice_log::LogError;
use sluice_log::kafka::{ConsumedRecord, KafkaConfig, LogReader};
use sluice_profiles::ProfileError;
use sluice_profiles::engine::EventFeed;
use sluice_profiles::engine::feed::{FeedRead, owned, seq_of};
use sluice_store::log_record::LogRecord;
use sluice_store::{CursorEvent, EventCursor, LogAdvance, Store, StoredEvent};

/// How long a read waits for a first record: an idle engine polls at its
/// own interval, so this only lets a read catch calls just appended.
const READ_WAIT: Duration = Duration::from_millis(50);

/// The name the reader gives the brokers.
const CLIENT: &str = "sluice-profiles";

/// Reads the topic for the profile engine.
pub(crate) struct TopicFeed {
    reader: LogReader,
    store: Arc<dyn Store>,
    topic: String,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Each log partition read's next offset.
    at: BTreeMap<i32, i64>,
    /// Read the positions from the store before the next read.
    stale: bool,
}

impl TopicFeed {
    pub(crate) fn new(config: &KafkaConfig, store: Arc<dyn Store>) -> Result<Self, LogError> {
        let reader = LogReader::new(config, CLIENT)?;
        Ok(TopicFeed {
            reader,
            store,
            topic: config.topic.clone(),
            state: Mutex::new(State {
                at: BTreeMap::new(),
                stale: true,
            }),
        })
    }

    /// Where to read each of `wanted` from: the feed's own place while it
    /// has one, else the stored position (the oldest record retained for a
    /// partition never read).
    async fn positions(&self, wanted: &[i32]) -> Result<BTreeMap<i32, i64>, ProfileError> {
        let known = {
            let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            (!state.stale && wanted.iter().all(|p| state.at.contains_key(p)))
                .then(|| wanted.iter().map(|p| (*p, state.at[p])).collect())
        };
        if let Some(known) = known {
            return Ok(known);
        }
        let stored: BTreeMap<i32, i64> = self
            .store
            .profile_log_positions(&self.topic)
            .await?
            .into_iter()
            .collect();
        let at: BTreeMap<i32, i64> = wanted
            .iter()
            .map(|p| (*p, stored.get(p).copied().unwrap_or(0)))
            .collect();
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.at.clone_from(&at);
        state.stale = false;
        Ok(at)
    }

    async fn read_now(&self, held: &[u16], of: u16, limit: u32) -> Result<FeedRead, ProfileError> {
        let log = |e: LogError| ProfileError::Log(e.to_string());
        let wanted = owned(&self.reader.partitions().await.map_err(log)?, held, of);
        let from = self.positions(&wanted).await?;
        let max = usize::try_from(limit).unwrap_or(usize::MAX).max(1);
        let records = self.reader.read(from, max, READ_WAIT).await.map_err(log)?;
        let mut next: BTreeMap<i32, i64> = BTreeMap::new();
        let mut events: Vec<CursorEvent> = Vec::with_capacity(records.len());
        for record in &records {
            next.insert(record.partition, record.offset + 1);
            events.push(event_of(record));
        }
        // Calls of one person sit in one partition, in order; across
        // partitions, acceptance time is the order the engine applies.
        events.sort_by_key(|e| e.event.received_at);
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.at.extend(&next);
        Ok(FeedRead {
            events,
            advance: LogAdvance {
                topic: self.topic.clone(),
                next: next.into_iter().collect(),
            },
        })
    }
}

impl EventFeed for TopicFeed {
    fn read<'a>(
        &'a self,
        held: &'a [u16],
        of: u16,
        limit: u32,
    ) -> Pin<Box<dyn Future<Output = Result<FeedRead, ProfileError>> + Send + 'a>> {
        Box::pin(self.read_now(held, of, limit))
    }

    fn reset(&self) {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .stale = true;
    }
}

/// The call a record holds, as the engine reads events. A blocked call, or
/// a record this build cannot read, comes marked as not the engine's, so
/// its position moves all the same.
fn event_of(record: &ConsumedRecord) -> CursorEvent {
    let seq = seq_of(record.partition, record.offset);
    let decoded = LogRecord::decode(&record.payload);
    if let Err(e) = &decoded {
        tracing::warn!(
            partition = record.partition,
            offset = record.offset,
            error = %e,
            "profile engine skips a record it cannot read"
        );
    }
    let call = decoded.ok().filter(|r| r.blocked.is_none());
    let event = match &call {
        Some(r) => StoredEvent {
            seq,
            source_id: r.source_id.clone(),
            message_id: r.message_id.clone(),
            event_type: r.event_type.clone(),
            received_at: r.received_at,
            body: r.body.clone(),
            blocked: None,
        },
        None => StoredEvent {
            seq,
            source_id: record.source_id.clone(),
            message_id: record.message_id.clone(),
            event_type: String::new(),
            received_at: DateTime::parse_from_rfc3339(&record.received_at)
                .map_or_else(|_| Utc::now(), |t| t.with_timezone(&Utc)),
            body: String::new(),
            blocked: None,
        },
    };
    CursorEvent {
        cursor: EventCursor::default(),
        event,
        elsewhere: call.is_none(),
    }
}
