//! TLS and SASL to the brokers, against the test broker's SASL_SSL listener
//! (`scripts/kafka-test-server.sh bootstrap tls` and `tls-ca`): calls go
//! both ways with each mechanism, and a client that cannot verify the
//! broker, or that the broker does not know, gets an error, never a wait
//! or a plaintext connection.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use sluice_log::kafka::{
    KafkaConfig, LogProducer, LogReader, Protocol, Sasl, Security, ensure_topic,
};

use crate::event;

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: run scripts/kafka-test-server.sh start (see scripts/test)")
    })
}

/// A client of the SASL_SSL listener with `mechanism` and `password`,
/// trusting `ca` (`None`: the system's roots).
fn over_tls(topic: &str, mechanism: &str, password: &str, ca: Option<String>) -> KafkaConfig {
    let mut config = KafkaConfig::new(var("SLUICE_TEST_KAFKA_TLS_BOOTSTRAP"), topic);
    config.ack_timeout = Duration::from_secs(5);
    config.security = Security {
        protocol: Protocol::SaslSsl,
        ca_location: ca,
        sasl: Some(Sasl {
            mechanism: mechanism.into(),
            username: "sluice".into(),
            password: password.into(),
        }),
        ..Security::default()
    };
    config
}

fn topic() -> String {
    format!("events-{}", uuid::Uuid::new_v4())
}

#[tokio::test]
async fn calls_go_both_ways_over_tls_with_plain_and_scram() {
    for mechanism in ["PLAIN", "SCRAM-SHA-256"] {
        let config = over_tls(
            &topic(),
            mechanism,
            "sluice-test-secret",
            Some(var("SLUICE_TEST_KAFKA_CA")),
        );
        ensure_topic(&config, 1, 1, Duration::from_secs(3600))
            .await
            .unwrap_or_else(|e| panic!("{mechanism}: {e}"));
        let producer = LogProducer::new(&config).unwrap();
        let events: Vec<_> = (0..3).map(|seq| event("src", "user-1", seq)).collect();
        producer.append(&events).await.unwrap();

        let reader = LogReader::new(&config, "sluice-test").unwrap();
        assert_eq!(reader.partitions().await.unwrap(), vec![0]);
        let all = reader
            .read(BTreeMap::from([(0, 0)]), 10, Duration::from_secs(10))
            .await
            .unwrap();
        let ids: Vec<&str> = all.iter().map(|r| r.message_id.as_str()).collect();
        assert_eq!(ids, ["user-1-0", "user-1-1", "user-1-2"], "{mechanism}");
        // Read again from a position of the caller's: from there on.
        let later = reader
            .read(BTreeMap::from([(0, 2)]), 10, Duration::from_secs(10))
            .await
            .unwrap();
        assert_eq!(later.len(), 1, "{mechanism}");
        assert_eq!(later[0].offset, 2);
    }
}

/// Appending with `config` fails, within its timeout and a little more.
async fn refused(config: &KafkaConfig, why: &str) {
    let producer = LogProducer::new(config).unwrap();
    let started = Instant::now();
    let outcome = producer.append(&[event("src", "user-1", 0)]).await;
    assert!(outcome.is_err(), "{why}: accepted");
    assert!(
        started.elapsed() < config.ack_timeout + Duration::from_secs(3),
        "{why}: took {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_wrong_password_is_refused_within_the_timeout() {
    let config = over_tls(
        &topic(),
        "SCRAM-SHA-256",
        "not-the-password",
        Some(var("SLUICE_TEST_KAFKA_CA")),
    );
    refused(&config, "wrong password").await;
}

#[tokio::test]
async fn a_broker_the_client_cannot_verify_is_refused() {
    // The test CA is not among the system's roots.
    let config = over_tls(&topic(), "PLAIN", "sluice-test-secret", None);
    refused(&config, "unverified broker").await;
}
