//! The event log on Apache Kafka, through rdkafka (librdkafka).
//!
//! - [`LogProducer`]: appends a batch and returns once every record is
//!   acknowledged by all in-sync replicas (`acks=all`, idempotent).
//! - [`LogConsumer`]: one member of a consumer group; reads records per
//!   partition, in offset order, and commits offsets only when told.
//! - [`ensure_topic`]: creates the event topic when it is missing.
//! - `revoke`: commits a partition's position when the group takes it
//!   away ([`Positions`]).
//! - [`LogTail`]: the newest records of each partition, for the debugger.
//! - [`LogReader`]: chosen partitions from offsets the caller keeps, for
//!   the profile engine.
//! - [`Security`]: TLS and SASL to the brokers.

mod admin;
mod consumer;
mod errors;
mod producer;
mod reader;
mod revoke;
mod security;
mod tail;

use std::time::Duration;

pub use admin::ensure_topic;
pub use consumer::{ConsumedRecord, LogConsumer, PartitionRecords, Polled};
pub use producer::{Appended, LogProducer};
pub use reader::LogReader;
pub use revoke::Positions;
pub use security::{MECHANISMS, Protocol, Sasl, Security};
pub use tail::{LogTail, TAIL_DEPTH};

/// Where the log is and how long to wait for it.
#[derive(Debug, Clone)]
pub struct KafkaConfig {
    /// `host:port,host:port` of one or more brokers.
    pub bootstrap_servers: String,
    /// The topic holding accepted events.
    pub topic: String,
    /// Names this node to the brokers (their logs and quotas).
    pub client_id: String,
    /// How long an append waits for every acknowledgement before it gives
    /// up with [`crate::LogError::Unavailable`] (librdkafka's
    /// `message.timeout.ms`: retries included).
    pub ack_timeout: Duration,
    /// TLS and SASL to the brokers.
    pub security: Security,
}

impl KafkaConfig {
    /// A configuration with the defaults: client id `sluice`, a 10 s
    /// acknowledgement timeout, plaintext.
    pub fn new(bootstrap_servers: impl Into<String>, topic: impl Into<String>) -> Self {
        KafkaConfig {
            bootstrap_servers: bootstrap_servers.into(),
            topic: topic.into(),
            client_id: "sluice".into(),
            ack_timeout: Duration::from_secs(10),
            security: Security::default(),
        }
    }

    fn client_config(&self) -> rdkafka::ClientConfig {
        let mut config = rdkafka::ClientConfig::new();
        config
            .set("bootstrap.servers", &self.bootstrap_servers)
            .set("client.id", &self.client_id);
        for (key, value) in self.security.settings() {
            config.set(key, value);
        }
        config
    }
}

/// Milliseconds of `duration` for a librdkafka setting, at least 1.
fn millis(duration: Duration) -> String {
    duration.as_millis().clamp(1, i32::MAX as u128).to_string()
}
