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
        let mut by_partition: BTreeMap<i32, Vec<CursorEvent>> = BTreeMap::new();
        for record in &records {
            next.insert(record.partition, record.offset + 1);
            by_partition
                .entry(record.partition)
                .or_default()
                .push(event_of(record));
        }
        let events = merge(by_partition.into_values().collect());
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

/// One list of the partitions' calls: each partition's in its log order
/// (a person's calls of one source are all in one partition, in the order
/// they were accepted), and across partitions the earliest accepted first.
fn merge(partitions: Vec<Vec<CursorEvent>>) -> Vec<CursorEvent> {
    let total = partitions.iter().map(Vec::len).sum();
    let mut heads: Vec<std::iter::Peekable<std::vec::IntoIter<CursorEvent>>> = partitions
        .into_iter()
        .map(|p| p.into_iter().peekable())
        .collect();
    let mut out = Vec::with_capacity(total);
    loop {
        let earliest = heads
            .iter_mut()
            .enumerate()
            .filter_map(|(i, h)| h.peek().map(|e| (e.event.received_at, i)))
            .min();
        let Some(event) = earliest.and_then(|(_, i)| heads[i].next()) else {
            return out;
        };
        out.push(event);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn call(at_ms: i64, id: &str) -> CursorEvent {
        CursorEvent {
            cursor: EventCursor::default(),
            event: StoredEvent {
                seq: 0,
                source_id: "s".into(),
                message_id: id.into(),
                event_type: "track".into(),
                received_at: DateTime::from_timestamp_millis(at_ms).unwrap_or_default(),
                body: String::new(),
                blocked: None,
            },
            elsewhere: false,
        }
    }

    #[test]
    fn keeps_each_partitions_order_and_takes_the_earliest_head_first() {
        // Partition a's second call was stamped earlier than its first (two
        // ingest nodes' clocks): the log's order stands.
        let a = vec![call(10, "a1"), call(5, "a2"), call(30, "a3")];
        let b = vec![call(7, "b1"), call(20, "b2")];
        let ids: Vec<String> = merge(vec![a, b])
            .into_iter()
            .map(|e| e.event.message_id)
            .collect();
        assert_eq!(ids, ["b1", "a1", "a2", "b2", "a3"]);
    }
}
