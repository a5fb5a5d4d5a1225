//! Reading the log as one member of a consumer group, committing explicitly.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use rdkafka::consumer::{CommitMode, Consumer, StreamConsumer};
use rdkafka::message::{BorrowedMessage, Headers, Message};
use rdkafka::{Offset, TopicPartitionList};

use super::revoke::{GroupContext, Positions};
use super::{KafkaConfig, errors};
use crate::LogError;
use crate::record::{HEADER_MESSAGE_ID, HEADER_RECEIVED_AT, HEADER_SOURCE_ID};
use crate::watermark::Position;

/// How long reading a partition's committed offset may take.
const COMMITTED_WAIT: Duration = Duration::from_secs(10);

/// One record read from the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumedRecord {
    /// Its partition.
    pub partition: i32,
    /// Its offset in that partition.
    pub offset: i64,
    /// Its key ([`crate::partition_key`] of source and person).
    pub key: Vec<u8>,
    /// The `sluice-source-id` header.
    pub source_id: String,
    /// The `sluice-message-id` header.
    pub message_id: String,
    /// The `sluice-received-at` header (RFC 3339).
    pub received_at: String,
    /// The stored event's JSON.
    pub payload: Vec<u8>,
}

/// The records of one partition from one poll, in offset order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionRecords {
    /// The partition.
    pub partition: i32,
    /// Its records, offsets ascending.
    pub records: Vec<ConsumedRecord>,
}

impl PartitionRecords {
    /// The offset to commit once every record here is dealt with: the one
    /// after the last.
    pub fn next_offset(&self) -> Option<i64> {
        self.records.last().map(|r| r.offset + 1)
    }
}

/// What one [`LogConsumer::poll`] found.
#[derive(Debug)]
pub struct Polled {
    /// The records taken, by partition.
    pub records: Vec<PartitionRecords>,
    /// The error that ended the poll, if one did. The records before it are
    /// in `records` all the same.
    pub error: Option<LogError>,
}

/// A member of a consumer group on the log's topic. Offsets are never
/// committed behind the caller's back (`enable.auto.commit=false`): a
/// partition's committed offset moves only through [`LogConsumer::commit`]
/// and, as the group takes a partition away, to the position the caller's
/// [`Positions`] gives, so a member that dies leaves every record it had
/// not committed to the member that takes the partition over.
pub struct LogConsumer {
    consumer: Arc<StreamConsumer<GroupContext>>,
    topic: String,
}

impl std::fmt::Debug for LogConsumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogConsumer")
            .field("topic", &self.topic)
            .finish_non_exhaustive()
    }
}

impl LogConsumer {
    /// Joins consumer group `group_id` on `config.topic`. A group that has
    /// never committed starts at the oldest record the log retains. With
    /// `positions`, a partition the group takes away is first committed up
    /// to where it says (see `revoke`).
    pub fn new(
        config: &KafkaConfig,
        group_id: &str,
        positions: Option<Positions>,
    ) -> Result<Self, LogError> {
        let consumer = config
            .client_config()
            .set("group.id", group_id)
            .set("enable.auto.commit", "false")
            .set("enable.auto.offset.store", "false")
            .set("auto.offset.reset", "earliest")
            // A rebalance moves only the partitions that change owner; the
            // others keep being read and delivered meanwhile.
            .set("partition.assignment.strategy", "cooperative-sticky")
            // A member that stops heartbeating (kill -9) loses its
            // partitions after this long.
            .set("session.timeout.ms", "10000")
            .set("heartbeat.interval.ms", "1000")
            // Read ahead a little per partition, not librdkafka's default of
            // up to 64 MB and 100,000 records each: with dozens of
            // partitions that is gigabytes, and the consumer only takes
            // what its sends have room for.
            .set("queued.max.messages.kbytes", "2048")
            .set("queued.min.messages", "2000")
            .create_with_context::<_, StreamConsumer<GroupContext>>(GroupContext {
                topic: config.topic.clone(),
                positions,
            })
            .map_err(|e| errors::client_error(&e))?;
        consumer
            .subscribe(&[config.topic.as_str()])
            .map_err(|e| errors::client_error(&e))?;
        Ok(LogConsumer {
            consumer: Arc::new(consumer),
            topic: config.topic.clone(),
        })
    }

    /// Waits up to `wait` for a record, then takes what else has already
    /// arrived, up to `max` records in all, grouped by partition. No records
    /// means nothing arrived in time.
    ///
    /// Records come once per assignment: after a rebalance that hands a
    /// partition back, reading resumes at its committed offset.
    ///
    /// librdkafka reports a broker or partition error (a broker gone, a
    /// leader moving) in the same queue as the records. Such an error ends
    /// the poll, and [`Polled::error`] carries it beside the records taken
    /// before it. Those records have left the client's queue and will not
    /// come again: dropping them would let the offsets after them commit
    /// past calls nobody sent.
    pub async fn poll(&self, max: usize, wait: Duration) -> Polled {
        let mut by_partition: BTreeMap<i32, Vec<ConsumedRecord>> = BTreeMap::new();
        let mut taken = 0;
        let mut deadline = wait;
        let mut error = None;
        while taken < max {
            let message = match tokio::time::timeout(deadline, self.consumer.recv()).await {
                Err(_elapsed) => break,
                Ok(Ok(message)) => message,
                Ok(Err(e)) => {
                    error = Some(errors::client_error(&e));
                    break;
                }
            };
            let record = record_of(&message);
            by_partition
                .entry(record.partition)
                .or_default()
                .push(record);
            taken += 1;
            // After the first record, only what is already here.
            deadline = Duration::ZERO;
        }
        Polled {
            records: by_partition
                .into_iter()
                .map(|(partition, records)| PartitionRecords { partition, records })
                .collect(),
            error,
        }
    }

    /// Commits each position: every record before its offset is dealt
    /// with, and so are those its metadata lists. Waits for the group
    /// coordinator to confirm.
    pub async fn commit(&self, positions: &[Position]) -> Result<(), LogError> {
        if positions.is_empty() {
            return Ok(());
        }
        let list = commit_list(&self.topic, positions).map_err(|e| errors::client_error(&e))?;
        let consumer = Arc::clone(&self.consumer);
        tokio::task::spawn_blocking(move || consumer.commit(&list, CommitMode::Sync))
            .await
            .map_err(|e| LogError::Client(format!("commit task: {e}")))?
            .map_err(|e| errors::client_error(&e))
    }

    /// The group's committed offset of `partition` and its metadata;
    /// `None` when the group never committed there.
    pub async fn committed(&self, partition: i32) -> Result<Option<(i64, String)>, LogError> {
        let mut list = TopicPartitionList::with_capacity(1);
        list.add_partition(&self.topic, partition);
        let consumer = Arc::clone(&self.consumer);
        let answer =
            tokio::task::spawn_blocking(move || consumer.committed_offsets(list, COMMITTED_WAIT))
                .await
                .map_err(|e| LogError::Client(format!("committed offsets task: {e}")))?
                .map_err(|e| errors::client_error(&e))?;
        let found = answer
            .elements()
            .iter()
            .find(|e| e.partition() == partition)
            .and_then(|e| match e.offset() {
                Offset::Offset(offset) => Some((offset, e.metadata().to_owned())),
                _ => None,
            });
        Ok(found)
    }

    /// The partitions of the topic assigned to this member now.
    pub fn assignment(&self) -> Result<Vec<i32>, LogError> {
        let list = self
            .consumer
            .assignment()
            .map_err(|e| errors::client_error(&e))?;
        Ok(list.elements().iter().map(|e| e.partition()).collect())
    }

    /// Leaves the group (its partitions move to the other members at once,
    /// without waiting for the session to time out).
    pub async fn close(self) {
        let consumer = self.consumer;
        // Leaving blocks on the coordinator's answer.
        let _ = tokio::task::spawn_blocking(move || drop(consumer)).await;
    }
}

/// The commit request for `positions`, metadata included.
pub(super) fn commit_list(
    topic: &str,
    positions: &[Position],
) -> Result<TopicPartitionList, rdkafka::error::KafkaError> {
    let mut list = TopicPartitionList::with_capacity(positions.len());
    for pos in positions {
        list.add_partition_offset(topic, pos.partition, Offset::Offset(pos.offset))?;
        if let Some(mut elem) = list.find_partition(topic, pos.partition) {
            elem.set_metadata(&pos.metadata);
        }
    }
    Ok(list)
}

pub(super) fn record_of(message: &BorrowedMessage<'_>) -> ConsumedRecord {
    let mut source_id = String::new();
    let mut message_id = String::new();
    let mut received_at = String::new();
    if let Some(headers) = message.headers() {
        for header in headers.iter() {
            let slot = match header.key {
                HEADER_SOURCE_ID => &mut source_id,
                HEADER_MESSAGE_ID => &mut message_id,
                HEADER_RECEIVED_AT => &mut received_at,
                _ => continue,
            };
            *slot = String::from_utf8_lossy(header.value.unwrap_or_default()).into_owned();
        }
    }
    ConsumedRecord {
        partition: message.partition(),
        offset: message.offset(),
        key: message.key().unwrap_or_default().to_vec(),
        source_id,
        message_id,
        received_at,
        payload: message.payload().unwrap_or_default().to_vec(),
    }
}

/// The partitions of `topic` as the brokers list them, in order; none
/// while the topic does not exist.
pub(super) fn topic_partitions<C: rdkafka::consumer::ConsumerContext>(
    consumer: &rdkafka::consumer::BaseConsumer<C>,
    topic: &str,
    wait: Duration,
) -> Result<Vec<i32>, LogError> {
    let metadata = consumer
        .fetch_metadata(Some(topic), wait)
        .map_err(|e| errors::client_error(&e))?;
    let mut found: Vec<i32> = metadata
        .topics()
        .iter()
        .filter(|t| t.name() == topic)
        .flat_map(|t| t.partitions().iter().map(|p| p.id()))
        .collect();
    found.sort_unstable();
    Ok(found)
}
