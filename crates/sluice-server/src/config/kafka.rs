//! `[kafka]`: the Kafka shape, where accepted calls live in an Apache Kafka
//! topic and PostgreSQL keeps configuration and retry state
//! (docs/kafka.md).

use serde::{Deserialize, Serialize};

/// The event log in Kafka. Off (the log stays in the database) while
/// `bootstrap_servers` is empty.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KafkaSettings {
    /// `host:port,host:port` of one or more brokers; empty (the default)
    /// keeps the event log in the database.
    pub bootstrap_servers: String,
    /// The topic of accepted calls (`sluice.events`).
    pub topic: String,
    /// Partitions of the topic when Sluice creates it (64). They bound how
    /// many nodes share delivery, and cannot be reduced later.
    pub partitions: i32,
    /// Brokers holding each partition when Sluice creates the topic (3).
    pub replication: i32,
    /// How long a record is kept in the topic, in hours (168: 7 days).
    pub retention_hours: u64,
    /// How long ingest waits for every in-sync replica to acknowledge a
    /// call before it answers `503` (10000 ms).
    pub ack_timeout_ms: u64,
    /// The consumer group of the nodes that deliver (`sluice-delivery`).
    pub delivery_group: String,
}

impl Default for KafkaSettings {
    fn default() -> Self {
        KafkaSettings {
            bootstrap_servers: String::new(),
            topic: "sluice.events".into(),
            partitions: 64,
            replication: 3,
            retention_hours: 168,
            ack_timeout_ms: 10_000,
            delivery_group: "sluice-delivery".into(),
        }
    }
}

impl KafkaSettings {
    /// Whether the event log is in Kafka.
    pub fn enabled(&self) -> bool {
        !self.bootstrap_servers.trim().is_empty()
    }
}
