//! [`KafkaLog`]: ingest's appends, as records of the event topic.

use std::collections::HashSet;

use async_trait::async_trait;
use sluice_log::LogError;
use sluice_log::kafka::LogProducer;
use sluice_store::log_record;
use sluice_store::{AppendRequest, Appended, ErrorKind, EventLog, Result, StoreError};

/// Appends accepted calls to the topic and returns once every in-sync
/// replica has them, so a `200` means the call is on the brokers.
pub struct KafkaLog {
    producer: LogProducer,
}

impl KafkaLog {
    /// Appends through `producer`.
    pub fn new(producer: LogProducer) -> Self {
        KafkaLog { producer }
    }
}

#[async_trait]
impl EventLog for KafkaLog {
    async fn append(&self, request: AppendRequest) -> Result<Appended> {
        let mut seen = HashSet::with_capacity(request.events.len());
        let mut records = Vec::with_capacity(request.events.len());
        let mut appended = Appended::default();
        for event in &request.events {
            // A batch that repeats a messageId keeps its first call, as the
            // database shapes do.
            if !seen.insert(event.message_id.as_str()) {
                appended.duplicates += 1;
                continue;
            }
            // A call a source rule blocked has no deliveries; the database
            // shapes keep it for the debugger, which reads the database.
            if event.blocked.is_some() {
                continue;
            }
            let payload = log_record::encode(&request.source_id, request.received_at, event)
                .map_err(|e| StoreError::internal(format!("encoding a log record: {e}")))?;
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
            appended.stored += 1;
        }
        if records.is_empty() {
            return Ok(appended);
        }
        self.producer.append(&records).await.map_err(log_error)?;
        Ok(appended)
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
