//! Reading chosen partitions from chosen offsets, outside any consumer
//! group: for a consumer that keeps its positions in its own database,
//! with the state they describe (the profile engine), and whose partitions
//! are handed out by leases there rather than by a group.
//!
//! A read names each partition's next offset. While those are where the
//! last read left off, the reader goes on from the records it already
//! fetched; any other position (a partition gained or lost, a step that
//! was not committed) assigns the partitions afresh at the offsets given.
//! A position below what the topic retains starts at its oldest record
//! (`auto.offset.reset=earliest`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::{Offset, TopicPartitionList};

use super::consumer::{ConsumedRecord, record_of, topic_partitions};
use super::{KafkaConfig, errors};
use crate::LogError;

/// How long finding the topic's partitions may take.
const METADATA_WAIT: Duration = Duration::from_secs(5);

/// Reads partitions of the topic from offsets the caller keeps.
pub struct LogReader {
    inner: Arc<Mutex<Inner>>,
    topic: String,
}

struct Inner {
    consumer: BaseConsumer,
    /// Each assigned partition's next offset, as the reads left it.
    at: BTreeMap<i32, i64>,
    /// The topic's partitions, once known.
    partitions: Option<Vec<i32>>,
}

impl std::fmt::Debug for LogReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogReader")
            .field("topic", &self.topic)
            .finish_non_exhaustive()
    }
}

impl LogReader {
    /// A reader of `config.topic`, named `client` to the brokers (the
    /// client requires a group id; the reader never joins or commits).
    /// Connecting is lazy.
    pub fn new(config: &KafkaConfig, client: &str) -> Result<Self, LogError> {
        let consumer: BaseConsumer = config
            .client_config()
            .set("group.id", client)
            .set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            .set("auto.offset.reset", "earliest")
            .set("queued.max.messages.kbytes", "2048")
            .set("queued.min.messages", "2000")
            .create()
            .map_err(|e| errors::client_error(&e))?;
        Ok(LogReader {
            inner: Arc::new(Mutex::new(Inner {
                consumer,
                at: BTreeMap::new(),
                partitions: None,
            })),
            topic: config.topic.clone(),
        })
    }

    /// The topic's partitions, asked of the brokers until they are known
    /// (none while the topic does not exist yet).
    pub async fn partitions(&self) -> Result<Vec<i32>, LogError> {
        let inner = Arc::clone(&self.inner);
        let topic = self.topic.clone();
        blocking(move || {
            let mut inner = inner.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(known) = &inner.partitions {
                return Ok(known.clone());
            }
            let found = topic_partitions(&inner.consumer, &topic, METADATA_WAIT)?;
            // None while the topic is still being created: asked again.
            if !found.is_empty() {
                inner.partitions = Some(found.clone());
            }
            Ok(found)
        })
        .await
    }

    /// Up to `max` records of the partitions in `from`, each from the
    /// offset given there, in offset order within a partition. Waits up to
    /// `wait` for the first record; returns what is at hand after that.
    pub async fn read(
        &self,
        from: BTreeMap<i32, i64>,
        max: usize,
        wait: Duration,
    ) -> Result<Vec<ConsumedRecord>, LogError> {
        let inner = Arc::clone(&self.inner);
        let topic = self.topic.clone();
        blocking(move || {
            let mut inner = inner.lock().unwrap_or_else(PoisonError::into_inner);
            inner.read(&topic, from, max, wait)
        })
        .await
    }
}

impl Inner {
    fn read(
        &mut self,
        topic: &str,
        from: BTreeMap<i32, i64>,
        max: usize,
        wait: Duration,
    ) -> Result<Vec<ConsumedRecord>, LogError> {
        if from != self.at {
            self.assign(topic, from)?;
        }
        let mut found = Vec::new();
        if self.at.is_empty() {
            return Ok(found);
        }
        let mut left = wait;
        while found.len() < max {
            let message = match self.consumer.poll(left) {
                None => break,
                Some(Ok(message)) => message,
                Some(Err(e)) => {
                    // Where the reader stands is no longer known: the next
                    // read assigns afresh.
                    self.at.clear();
                    return Err(errors::client_error(&e));
                }
            };
            left = Duration::ZERO;
            let record = record_of(&message);
            match self.at.get_mut(&record.partition) {
                // A record the assignment did not ask for (fetched before
                // it changed): not the caller's.
                None => continue,
                Some(next) if record.offset < *next => continue,
                Some(next) => *next = record.offset + 1,
            }
            found.push(record);
        }
        Ok(found)
    }

    fn assign(&mut self, topic: &str, from: BTreeMap<i32, i64>) -> Result<(), LogError> {
        let mut list = TopicPartitionList::with_capacity(from.len());
        for (&partition, &offset) in &from {
            list.add_partition_offset(topic, partition, Offset::Offset(offset.max(0)))
                .map_err(|e| errors::client_error(&e))?;
        }
        self.at.clear();
        self.consumer
            .assign(&list)
            .map_err(|e| errors::client_error(&e))?;
        self.at = from;
        Ok(())
    }
}

/// Runs `work`, which waits on the client, off the runtime's threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, LogError> + Send + 'static,
) -> Result<T, LogError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| LogError::Client(format!("reader task: {e}")))?
}
