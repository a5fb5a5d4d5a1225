//! The newest records of the topic, for the debugger: a reader outside any
//! consumer group that looks at the last records of every partition and
//! keeps a source's.
//!
//! In the Kafka shape accepted calls live in the topic, not in a database,
//! so the debugger reads them there. Kafka has no index by source, so the
//! debugger shows the calls among each partition's newest records
//! ([`TAIL_DEPTH`] of them): a live view, like Segment's, not a search of
//! the whole retention. Reading commits nothing and joins no group, so it
//! never moves a partition's offsets or its owner.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::{Offset, TopicPartitionList};

use super::consumer::{ConsumedRecord, record_of, topic_partitions};
use super::{KafkaConfig, errors};
use crate::LogError;

/// How many of each partition's newest records are looked at: with 64
/// partitions a look reads 12,800 records, a few megabytes.
pub const TAIL_DEPTH: i64 = 200;
/// How long one look may take, metadata and reads included.
const LOOK_WAIT: Duration = Duration::from_secs(5);

/// Reads the newest records of each partition of the topic.
pub struct LogTail {
    /// One look at a time: a look assigns the reader's partitions.
    consumer: Arc<Mutex<BaseConsumer>>,
    topic: String,
}

impl std::fmt::Debug for LogTail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogTail")
            .field("topic", &self.topic)
            .finish_non_exhaustive()
    }
}

impl LogTail {
    /// A reader of `config.topic`. Connecting is lazy.
    pub fn new(config: &KafkaConfig) -> Result<Self, LogError> {
        let consumer: BaseConsumer = config
            .client_config()
            // Required by the client; never joined (no subscribe, no commit).
            .set("group.id", "sluice-tail")
            .set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            .set("enable.partition.eof", "true")
            .create()
            .map_err(|e| errors::client_error(&e))?;
        Ok(LogTail {
            consumer: Arc::new(Mutex::new(consumer)),
            topic: config.topic.clone(),
        })
    }

    /// The records of `source_id` among each partition's newest
    /// [`TAIL_DEPTH`], in no particular order.
    pub async fn newest(&self, source_id: &str) -> Result<Vec<ConsumedRecord>, LogError> {
        let consumer = Arc::clone(&self.consumer);
        let (topic, source_id) = (self.topic.clone(), source_id.to_owned());
        tokio::task::spawn_blocking(move || {
            let consumer = consumer.lock().unwrap_or_else(PoisonError::into_inner);
            look(&consumer, &topic, &source_id)
        })
        .await
        .map_err(|e| LogError::Client(format!("tail task: {e}")))?
    }
}

/// Reads each partition from `TAIL_DEPTH` before its end to its end.
fn look(
    consumer: &BaseConsumer,
    topic: &str,
    source_id: &str,
) -> Result<Vec<ConsumedRecord>, LogError> {
    let started = Instant::now();
    let partitions = topic_partitions(consumer, topic, LOOK_WAIT)?;
    // Where each partition ends now: reading stops there.
    let mut ends: HashMap<i32, i64> = HashMap::new();
    let mut list = TopicPartitionList::with_capacity(partitions.len());
    for partition in partitions {
        let left = LOOK_WAIT.saturating_sub(started.elapsed());
        let (low, high) = consumer
            .fetch_watermarks(topic, partition, left)
            .map_err(|e| errors::client_error(&e))?;
        if high > low {
            ends.insert(partition, high);
            let from = low.max(high - TAIL_DEPTH);
            list.add_partition_offset(topic, partition, Offset::Offset(from))
                .map_err(|e| errors::client_error(&e))?;
        }
    }
    let mut found = Vec::new();
    if ends.is_empty() {
        return Ok(found);
    }
    consumer
        .assign(&list)
        .map_err(|e| errors::client_error(&e))?;
    while !ends.is_empty() {
        let Some(left) = LOOK_WAIT.checked_sub(started.elapsed()) else {
            break;
        };
        let message = match consumer.poll(left) {
            None => break,
            Some(Ok(message)) => message,
            Some(Err(rdkafka::error::KafkaError::PartitionEOF(partition))) => {
                ends.remove(&partition);
                continue;
            }
            Some(Err(e)) => {
                let _ = consumer.unassign();
                return Err(errors::client_error(&e));
            }
        };
        let record = record_of(&message);
        if ends
            .get(&record.partition)
            .is_some_and(|end| record.offset + 1 >= *end)
        {
            ends.remove(&record.partition);
        }
        if record.source_id == source_id {
            found.push(record);
        }
    }
    let _ = consumer.unassign();
    Ok(found)
}
