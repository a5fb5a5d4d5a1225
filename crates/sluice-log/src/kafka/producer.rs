//! Appending accepted events: idempotent, `acks=all`, acknowledged before
//! the call returns.

use std::time::{Duration, Instant};

use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord, Producer};
use rdkafka::util::Timeout;

use super::{KafkaConfig, errors, millis};
use crate::record::{HEADER_MESSAGE_ID, HEADER_RECEIVED_AT, HEADER_SOURCE_ID};
use crate::{LogError, LogEvent, format_received_at};

/// Where the log put one appended event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appended {
    /// The partition its (source, person) key maps to.
    pub partition: i32,
    /// Its offset there.
    pub offset: i64,
}

/// Appends events to the log's topic. Cheap to share: one per node, used by
/// every request concurrently (librdkafka batches their records).
pub struct LogProducer {
    producer: FutureProducer,
    topic: String,
    ack_timeout: Duration,
}

impl std::fmt::Debug for LogProducer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogProducer")
            .field("topic", &self.topic)
            .field("ack_timeout", &self.ack_timeout)
            .finish_non_exhaustive()
    }
}

impl LogProducer {
    /// A producer for `config.topic`. Connecting is lazy: a broker that is
    /// down shows up as [`LogError::Unavailable`] on the first append.
    pub fn new(config: &KafkaConfig) -> Result<Self, LogError> {
        let producer = config
            .client_config()
            // Kafka's Java clients' partitioner: a key lands in the same
            // partition whichever client wrote it.
            .set("partitioner", "murmur2_random")
            // No duplicates from the producer's own retries, and no
            // reordering within a partition (librdkafka then also takes
            // acks=all and a bounded number of requests in flight).
            .set("enable.idempotence", "true")
            .set("acks", "all")
            // The whole time an append may take, retries included.
            .set("message.timeout.ms", millis(config.ack_timeout))
            .set(
                "request.timeout.ms",
                millis(config.ack_timeout.min(REQUEST_TIMEOUT)),
            )
            // Concurrent requests' records share a broker request; a few
            // milliseconds of lingering is what makes batches.
            .set("linger.ms", "5")
            .set("compression.type", "lz4")
            .create::<FutureProducer>()
            .map_err(|e| errors::client_error(&e))?;
        Ok(LogProducer {
            producer,
            topic: config.topic.clone(),
            ack_timeout: config.ack_timeout,
        })
    }

    /// Appends `events` and returns, in their order, where each landed,
    /// once all of them are acknowledged by every in-sync replica.
    ///
    /// On error some events may be in the log and others not; the caller
    /// answers `503` (for [`LogError::is_transient`]) and the client sends
    /// the batch again, under the same message ids, which consumers
    /// deduplicate as they do any retried call.
    pub async fn append(&self, events: &[LogEvent]) -> Result<Vec<Appended>, LogError> {
        let started = Instant::now();
        let mut pending = Vec::with_capacity(events.len());
        for event in events {
            let key = event.key();
            let received_at = format_received_at(event.received_at);
            let headers = OwnedHeaders::new_with_capacity(3)
                .insert(Header {
                    key: HEADER_SOURCE_ID,
                    value: Some(event.source_id.as_bytes()),
                })
                .insert(Header {
                    key: HEADER_MESSAGE_ID,
                    value: Some(event.message_id.as_bytes()),
                })
                .insert(Header {
                    key: HEADER_RECEIVED_AT,
                    value: Some(received_at.as_bytes()),
                });
            let record = FutureRecord::to(&self.topic)
                .key(key.as_bytes())
                .payload(event.payload.as_slice())
                .timestamp(event.received_at.timestamp_millis())
                .headers(headers);
            // A full local queue is the broker not keeping up: the same
            // answer as a missing acknowledgement, without waiting for it.
            match self.producer.send_result(record) {
                Ok(delivery) => pending.push((delivery, event.payload.len())),
                Err((error, _)) => {
                    return Err(errors::append_error(
                        &error,
                        started.elapsed(),
                        event.payload.len(),
                    ));
                }
            }
        }
        let mut appended = Vec::with_capacity(pending.len());
        let mut first_error = None;
        // librdkafka times a record out only once it is no longer in a
        // request in flight, which can take a request timeout or two more;
        // the caller was promised an answer within the acknowledgement
        // timeout, so that is the deadline. A record given up on here may
        // still land: the client's retry under the same message id is what
        // settles it, as for any unacknowledged call.
        let deadline = tokio::time::Instant::from_std(started) + self.ack_timeout;
        for (delivery, bytes) in pending {
            match tokio::time::timeout_at(deadline, delivery).await {
                Ok(Ok(Ok(delivery))) => appended.push(Appended {
                    partition: delivery.partition,
                    offset: delivery.offset,
                }),
                Ok(Ok(Err((error, _)))) => {
                    first_error.get_or_insert_with(|| {
                        errors::append_error(&error, started.elapsed(), bytes)
                    });
                }
                Ok(Err(_canceled)) => {
                    first_error.get_or_insert_with(|| {
                        LogError::Client("the producer was closed before acknowledging".into())
                    });
                }
                Err(_elapsed) => {
                    return Err(LogError::Unavailable {
                        waited: started.elapsed(),
                        reason: "no acknowledgement within the timeout".into(),
                    });
                }
            }
        }
        match first_error {
            Some(error) => Err(error),
            None => Ok(appended),
        }
    }

    /// Waits up to `timeout` for records still in flight (at shutdown).
    pub fn flush(&self, timeout: Duration) -> Result<(), LogError> {
        self.producer
            .flush(Timeout::After(timeout))
            .map_err(|e| errors::append_error(&e, timeout, 0))
    }

    /// The acknowledgement timeout this producer was made with.
    pub fn ack_timeout(&self) -> Duration {
        self.ack_timeout
    }
}

/// A single request's timeout: short enough that librdkafka retries within
/// the acknowledgement timeout.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
