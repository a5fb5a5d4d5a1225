//! A broker that stops acknowledging: the typed error, within the timeout.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use sluice_log::LogError;
use sluice_log::kafka::{KafkaConfig, LogProducer, ensure_topic};

use crate::{bootstrap, event};

/// A single broker of this test's own (the shared one must stay up),
/// started by the project's script in a temporary directory; stopped on drop.
struct OwnBroker {
    dir: tempfile::TempDir,
    bootstrap: String,
}

fn script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/kafka-test-server.sh")
}

impl OwnBroker {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new(script())
            .arg("start")
            .env("SLUICE_KAFKA_TEST_DIR", dir.path())
            .env("SLUICE_KAFKA_TEST_PORT", "29400")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let bootstrap = String::from_utf8(out.stdout).unwrap().trim().to_owned();
        OwnBroker { dir, bootstrap }
    }

    fn run(&self, command: &str) {
        let out = Command::new(script())
            .arg(command)
            .env("SLUICE_KAFKA_TEST_DIR", self.dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for OwnBroker {
    fn drop(&mut self) {
        let _ = Command::new(script())
            .arg("stop")
            .env("SLUICE_KAFKA_TEST_DIR", self.dir.path())
            .status();
    }
}

#[tokio::test]
async fn a_broker_killed_mid_produce_gives_unavailable_within_the_ack_timeout() {
    // Skipped like the other tests when no broker is configured at all.
    let _ = bootstrap();
    let broker = OwnBroker::start();
    let mut config = KafkaConfig::new(&broker.bootstrap, "events");
    config.ack_timeout = Duration::from_secs(4);
    ensure_topic(&config, 2, 1, Duration::from_secs(3600))
        .await
        .unwrap();
    let producer = std::sync::Arc::new(LogProducer::new(&config).unwrap());
    let warm: Vec<_> = (0..20)
        .map(|seq| event("source-3", "user-b", seq))
        .collect();
    producer.append(&warm).await.unwrap();

    // Appends keep running while the broker dies under them.
    let writer = {
        let producer = producer.clone();
        tokio::spawn(async move {
            let mut outcomes = Vec::new();
            for round in 0..40 {
                let batch: Vec<_> = (0..10)
                    .map(|i| event("source-3", &format!("user-{i}"), round * 10 + i))
                    .collect();
                let started = Instant::now();
                let outcome = producer.append(&batch).await;
                let failed = outcome.is_err();
                outcomes.push((outcome.map(|a| a.len()), started.elapsed()));
                if failed && outcomes.iter().filter(|(o, _)| o.is_err()).count() >= 2 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            outcomes
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    broker.run("kill");

    let outcomes = writer.await.unwrap();
    let limit = config.ack_timeout + Duration::from_secs(2);
    let mut unavailable = 0;
    for (outcome, took) in &outcomes {
        assert!(*took < limit, "an append took {took:?}: {outcome:?}");
        match outcome {
            Ok(n) => assert_eq!(*n, 10),
            Err(LogError::Unavailable { waited, .. }) => {
                assert!(*waited < limit, "{waited:?}");
                unavailable += 1;
            }
            Err(other) => panic!("not the typed unavailability: {other:?}"),
        }
    }
    assert!(
        unavailable > 0,
        "no append failed after the kill: {outcomes:?}"
    );
    // Once the broker is gone, every append fails the same way.
    let error = producer.append(&warm[..1]).await.unwrap_err();
    assert!(error.is_transient(), "{error:?}");
}
