//! Restarts: a backfill cut short by a restart resumes without gaps or repeats.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use sluice_testkit::Receiver;

use super::{SECRET, bodies, count_seen, outbox};
use crate::support::{TestServer, eventually, test_config};

#[tokio::test]
async fn a_restart_during_a_backfill_neither_misses_nor_repeats_anyone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = || {
        let mut c = test_config(dir.path());
        c.personas.poll_interval_ms = 20;
        c
    };
    let s = TestServer::start_with(config()).await;
    let (_src, key) = s.source("app").await;
    let (quiet, _) = s.source("quiet").await;
    let rx = Receiver::start().await;
    let dest = s
        .webhook(&quiet, json!([{"url": rx.url()}]), Some(SECRET))
        .await;
    let batch: Vec<Value> = (0..1500)
        .map(|i| json!({"type": "track", "userId": format!("u{i:04}"), "event": "Seen"}))
        .collect();
    let body = json!({"batch": batch}).to_string();
    assert_eq!(s.collect("/v1/batch", Some(&key), body).await.0, 200);
    // Wait until every profile exists, then create the trait and stop the
    // server while its backfill is under way (pages of 500).
    eventually(30, || async {
        let (code, _) = s.admin(Method::GET, "/profiles/u1499", None).await;
        (code == 200).then_some(())
    })
    .await;
    count_seen(&s, &dest).await;
    eventually(30, || async { (!rx.requests().is_empty()).then_some(()) }).await;
    s.stop().await;
    let s = TestServer::start_with(config()).await;
    // The outbox holds exactly one message per person: the job resumed at
    // its committed page. (Delivery itself is at-least-once: work leased by
    // the stopped node is sent after its lease, which this test skips.)
    let messages = eventually(60, || async {
        let ids = outbox(&s, &dest).await;
        (ids.len() >= 1500).then_some(ids)
    })
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let total = outbox(&s, &dest).await.len();
    let mut unique = messages.clone();
    unique.sort();
    unique.dedup();
    assert_eq!((unique.len(), total), (1500, 1500), "everyone once");
    let mut users: Vec<String> = bodies(&rx)
        .iter()
        .map(|b| b["userId"].as_str().unwrap_or_default().to_owned())
        .collect();
    users.sort();
    users.dedup();
    assert!(!users.is_empty());
    s.stop().await;
}
