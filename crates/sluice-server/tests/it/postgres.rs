//! The service on PostgreSQL, two nodes sharing one database: what one node
//! accepts is delivered once, and what one node configures the other serves.
//! Needs `SLUICE_TEST_POSTGRES_URL` (scripts/postgres-test-server.sh start).

use std::time::Duration;

use serde_json::json;
use sluice_server::config::StorageBackend;
use sluice_testkit::Receiver;

use crate::support::{TestServer, eventually, test_config};

fn pg_config(dir: &std::path::Path, schema: &str) -> sluice_server::Config {
    let url = std::env::var("SLUICE_TEST_POSTGRES_URL").unwrap_or_else(|_| {
        panic!("SLUICE_TEST_POSTGRES_URL is not set: run scripts/postgres-test-server.sh start")
    });
    let mut config = test_config(dir);
    config.storage.backend = StorageBackend::Postgres;
    config.storage.postgres_url = Some(url);
    config.storage.postgres_schema = Some(schema.to_owned());
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_share_sources_and_deliver_each_event_once() {
    let dir = tempfile::tempdir().unwrap();
    let schema = format!("sluice_it_{}", std::process::id());
    let a = TestServer::start_with(pg_config(dir.path(), &schema)).await;
    let b = TestServer::start_with(pg_config(dir.path(), &schema)).await;

    let (src, key) = a.source("shared").await;
    let rx = Receiver::start().await;
    a.webhook(&src, json!([rx.url()]), Some("pg-secret-123"))
        .await;

    // Node B learns of the source created on node A within its refresh.
    let call =
        |i: usize| json!({"userId": "u", "event": "e", "messageId": format!("pg-{i}")}).to_string();
    eventually(10, || async {
        (b.collect("/v1/track", Some(&key), call(0)).await.0 == 200).then_some(())
    })
    .await;
    for i in 1..50 {
        let node = if i % 2 == 0 { &a } else { &b };
        assert_eq!(node.collect("/v1/track", Some(&key), call(i)).await.0, 200);
    }
    let got = rx.wait_for(50, Duration::from_secs(20)).await;
    // Both nodes run delivery workers; leases mean each event is sent once.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut ids: Vec<String> = rx
        .requests()
        .iter()
        .map(|r| r.header("x-sluice-message-id").unwrap_or("").to_owned())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 50, "every event delivered");
    assert_eq!(rx.requests().len(), 50, "and none twice");
    assert!(got.iter().all(|r| r.header("x-signature")
        == Some(sluice_signing::sign(b"pg-secret-123", &r.body).as_str())));
    assert_eq!(
        b.events(&src).await.len(),
        50,
        "both nodes read the same store"
    );
    a.stop().await;
    b.stop().await;
}
