//! [`KafkaLog`]: ingest's appends, as records of the event topic, and the
//! debugger's view of the newest of them.

use std::collections::HashSet;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sluice_log::LogError;
use sluice_log::kafka::{LogProducer, LogTail};
use sluice_store::log_record::{self, LogRecord, RequestCounts};
use sluice_store::{
    AppendRequest, Appended, ErrorKind, EventLog, NewEvent, Result, StoreError, StoredEvent,
};

/// Appends accepted calls to the topic and returns once every in-sync
/// replica has them, so a `200` means the call is on the brokers.
pub struct KafkaLog {
    producer: LogProducer,
    tail: LogTail,
}

impl KafkaLog {
    /// Appends through `producer`; the debugger reads through `tail`.
    pub fn new(producer: LogProducer, tail: LogTail) -> Self {
        KafkaLog { producer, tail }
    }
}

/// The debugger's cursor for a record: its acceptance time in
/// milliseconds, then three digits of its partition and three of its
/// offset, so the newest come first across partitions and no two records
/// looked at together share one. The calls of one request share their
/// acceptance time; their partitions and offsets tell them apart, and the
/// debugger looks at 200 records of a partition, fewer than the thousand
/// offsets the last digits count. Values pass 2^53: read `seq` as a 64-bit
/// integer.
fn debugger_seq(received_at: DateTime<Utc>, partition: i32, offset: i64) -> i64 {
    received_at
        .timestamp_millis()
        .saturating_mul(1_000_000)
        .saturating_add(i64::from(partition.rem_euclid(1_000)) * 1_000)
        .saturating_add(offset.rem_euclid(1_000))
}

#[async_trait]
impl EventLog for KafkaLog {
    async fn append(&self, request: AppendRequest) -> Result<Appended> {
        // A batch that repeats a messageId keeps its first call, as the
        // database shapes do.
        let mut seen = HashSet::with_capacity(request.events.len());
        let kept: Vec<&NewEvent> = (request.events.iter())
            .filter(|e| seen.insert(e.message_id.as_str()))
            .collect();
        let appended = Appended {
            stored: kept.len() as u64,
            duplicates: (request.events.len() - kept.len()) as u64,
            handed: false,
        };
        // The request and its repeats count on its first record. Blocked
        // calls are appended too, to be counted; they have no destinations.
        let mut counts = RequestCounts {
            calls: 1,
            duplicates: u32::try_from(appended.duplicates).unwrap_or(u32::MAX),
        };
        let mut records = Vec::with_capacity(kept.len());
        for event in kept {
            let payload =
                log_record::encode(&request.source_id, request.received_at, event, counts)
                    .map_err(|e| StoreError::internal(format!("encoding a log record: {e}")))?;
            counts = RequestCounts::default();
            records.push(sluice_log::LogEvent {
                source_id: request.source_id.clone(),
                // The person's slot: one person's calls of a source share a
                // partition, in the order they were accepted, without the
                // user id itself in the key.
                person: event.person.to_string(),
                message_id: event.message_id.clone(),
                received_at: request.received_at,
                payload,
            });
        }
        if records.is_empty() {
            return Ok(appended);
        }
        self.producer.append(&records).await.map_err(log_error)?;
        Ok(appended)
    }

    /// The source's calls among each partition's newest records
    /// (`sluice_log::kafka::LogTail`), newest first.
    async fn recent(
        &self,
        source_id: &str,
        before_seq: Option<i64>,
        limit: u32,
    ) -> Result<Option<Vec<StoredEvent>>> {
        let records = self.tail.newest(source_id).await.map_err(log_error)?;
        let mut events: Vec<StoredEvent> = records
            .iter()
            .filter_map(|consumed| {
                let record = LogRecord::decode(&consumed.payload).ok()?;
                Some(StoredEvent {
                    seq: debugger_seq(record.received_at, consumed.partition, consumed.offset),
                    source_id: record.source_id,
                    message_id: record.message_id,
                    event_type: record.event_type,
                    received_at: record.received_at,
                    body: record.body,
                    blocked: record.blocked.map(|b| b.rule),
                })
            })
            .filter(|e| before_seq.is_none_or(|before| e.seq < before))
            .collect();
        events.sort_by_key(|e| std::cmp::Reverse(e.seq));
        events.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
        Ok(Some(events))
    }
}

/// A broker that cannot acknowledge in time is the API's `503` with
/// `Retry-After`, like a database that cannot commit.
fn log_error(e: LogError) -> StoreError {
    let kind = if e.is_transient() {
        ErrorKind::Unavailable
    } else {
        ErrorKind::Internal
    };
    StoreError::caused(kind, "appending to the event log", e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_debugger_cursor_orders_by_acceptance_time_first() {
        let at = |ms| DateTime::from_timestamp_millis(ms).unwrap();
        let earlier = debugger_seq(at(1_767_225_600_000), 999, 999_999);
        let later = debugger_seq(at(1_767_225_600_001), 0, 0);
        assert!(earlier < later);
    }

    #[test]
    fn calls_of_one_request_in_different_partitions_get_different_cursors() {
        let at = DateTime::from_timestamp_millis(1_767_225_600_000).unwrap();
        let mut seen = HashSet::new();
        for partition in 0..64 {
            for offset in 1_000..1_200 {
                assert!(
                    seen.insert(debugger_seq(at, partition, offset)),
                    "partition {partition} offset {offset}"
                );
            }
        }
    }
}
