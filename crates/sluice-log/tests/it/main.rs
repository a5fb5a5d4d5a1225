//! The event log against a real Apache Kafka broker.
//!
//! Needs `SLUICE_TEST_KAFKA_BOOTSTRAP` (`scripts/kafka-test-server.sh start`
//! prints it), `SLUICE_TEST_KAFKA_TLS_BOOTSTRAP` and `SLUICE_TEST_KAFKA_CA`
//! (its `bootstrap tls` and `tls-ca`), and the feature `kafka`. Each test uses a topic and consumer
//! group of its own; the failure test starts and kills a broker of its own
//! with the same script.
#![cfg(feature = "kafka")]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failure panics with its message (clippy.toml allows it only inside #[test] functions)"
)]

mod broker_down;
mod group;
mod security;
mod tail;

use std::time::Duration;

use chrono::Utc;
use sluice_log::LogEvent;
use sluice_log::kafka::{KafkaConfig, ensure_topic};

const BOOTSTRAP_VAR: &str = "SLUICE_TEST_KAFKA_BOOTSTRAP";

fn bootstrap() -> String {
    std::env::var(BOOTSTRAP_VAR).unwrap_or_else(|_| {
        panic!("{BOOTSTRAP_VAR} is not set: run scripts/kafka-test-server.sh start and export its output")
    })
}

/// A fresh topic of `partitions` partitions on the shared test broker.
async fn fresh_topic(partitions: i32) -> KafkaConfig {
    let mut config = KafkaConfig::new(bootstrap(), format!("events-{}", uuid::Uuid::new_v4()));
    config.ack_timeout = Duration::from_secs(15);
    ensure_topic(&config, partitions, 1, Duration::from_secs(3600))
        .await
        .unwrap();
    config
}

fn group() -> String {
    format!("delivery-{}", uuid::Uuid::new_v4())
}

/// Event `seq` of `person`: its payload names both, so order can be checked.
fn event(source: &str, person: &str, seq: usize) -> LogEvent {
    let message_id = format!("{person}-{seq}");
    let payload = serde_json::json!({
        "type": "track",
        "event": "Order Completed",
        "userId": person,
        "messageId": message_id,
        "properties": { "seq": seq },
    });
    LogEvent {
        source_id: source.into(),
        person: person.into(),
        message_id,
        received_at: Utc::now(),
        payload: serde_json::to_vec(&payload).unwrap(),
    }
}
