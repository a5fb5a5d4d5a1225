//! Personas in the Kafka shape: the profile engine reads the topic at
//! positions it keeps in PostgreSQL with the profiles, and its identify
//! messages reach a signed webhook through PostgreSQL's outbox.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use sluice_testkit::Receiver;

use super::kafka_config;
use crate::personas::{bodies, count_seen, setup_with};
use crate::postgres::test_database;
use crate::support::{TestServer, eventually};

/// The newest `seen` trait sent for `user`, if any.
fn seen_of(rx: &Receiver, user: &str) -> Option<i64> {
    bodies(rx)
        .iter()
        .filter(|b| b["type"] == "identify" && b["userId"] == user)
        .filter_map(|b| b["traits"]["seen"].as_i64())
        .max()
}

/// How many records the engine's committed positions have passed.
async fn records_read(schema: &str) -> i64 {
    let client = test_database().await;
    let sql = format!("SELECT COALESCE(sum(next), 0)::bigint FROM \"{schema}\".profile_log_read");
    client.query_one(&sql, &[]).await.unwrap().get(0)
}

async fn send(s: &TestServer, key: &str, path: &str, body: Value) {
    let (status, answer) = s.collect(path, Some(key), body.to_string()).await;
    assert_eq!(status, 200, "{path}: {answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn computed_traits_are_built_from_the_topic_once_across_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut base = kafka_config(dir.path());
    base.personas.poll_interval_ms = 20;
    let schema = base.storage.postgres_schema.clone().unwrap();
    let (s, key, dest, rx) = setup_with(base.clone()).await;
    count_seen(&s, &dest).await;
    let call = |user: &str, event: &str, id: &str| json!({"type": "track", "userId": user, "event": event, "messageId": id});
    send(
        &s,
        &key,
        "/v1/batch",
        json!({"batch": [
            call("u1", "Seen", "m1"), call("u1", "Seen", "m2"), call("u1", "Seen", "m3"),
            call("u2", "Seen", "m4"), call("u2", "Seen", "m5"), call("u1", "Other", "m6"),
        ]}),
    )
    .await;
    // A client's retry: in the topic twice, applied once.
    send(&s, &key, "/v1/track", call("u1", "Seen", "m1")).await;
    eventually(30, || async {
        (seen_of(&rx, "u1") == Some(3) && seen_of(&rx, "u2") == Some(2)).then_some(())
    })
    .await;
    eventually(10, || async {
        (records_read(&schema).await == 7).then_some(())
    })
    .await;
    let (code, profile) = s.admin(Method::GET, "/profiles/u1", None).await;
    assert_eq!(code, 200, "{profile}");
    assert_eq!(profile["computed_traits"]["seen"], json!(3));
    assert_eq!(profile["events"].as_array().map(Vec::len), Some(4));
    s.stop().await;

    // Started again, the engine goes on from its stored positions: the
    // calls before are not applied again.
    let s = TestServer::start_with(base).await;
    send(&s, &key, "/v1/track", call("u1", "Seen", "m7")).await;
    eventually(30, || async {
        (seen_of(&rx, "u1") == Some(4)).then_some(())
    })
    .await;
    eventually(10, || async {
        (records_read(&schema).await == 8).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (_, profile) = s.admin(Method::GET, "/profiles/u1", None).await;
    assert_eq!(profile["computed_traits"]["seen"], json!(4));
    assert_eq!(profile["events"].as_array().map(Vec::len), Some(5));
    let sent: Vec<i64> = bodies(&rx)
        .iter()
        .filter(|b| b["userId"] == "u1")
        .filter_map(|b| b["traits"]["seen"].as_i64())
        .collect();
    let mut once = sent.clone();
    once.sort_unstable();
    once.dedup();
    assert_eq!(once.len(), sent.len(), "each change once: {sent:?}");
    assert!(sent.iter().all(|n| (1..=4).contains(n)), "{sent:?}");
    s.stop().await;
}
