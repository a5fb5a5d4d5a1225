//! Privacy on PostgreSQL with two nodes sharing one database: one node runs
//! the regulation (one notification, not two) and the other node blocks the
//! suppressed user within its sync interval. Needs `SLUICE_TEST_POSTGRES_URL`.

use std::time::Duration;

use reqwest::Method;
use serde_json::json;
use sluice_server::config::StorageBackend;
use sluice_testkit::Receiver;

use super::{finished, hook, regulate, send, stored_mentions, wait_deletes};
use crate::support::{TestServer, eventually, test_config};

fn pg_config(dir: &std::path::Path, schema: &str) -> sluice_server::Config {
    let url = std::env::var("SLUICE_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| panic!("SLUICE_TEST_POSTGRES_URL is not set"));
    let mut config = test_config(dir);
    config.storage.backend = StorageBackend::Postgres;
    config.storage.postgres_url = Some(url);
    config.storage.postgres_schema = Some(schema.to_owned());
    config.personas.poll_interval_ms = 20;
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_notify_once_and_both_block_a_suppressed_user() {
    let dir = tempfile::tempdir().expect("tempdir");
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let schema = format!("sluice_priv_{}_{nanos}", std::process::id());
    let a = TestServer::start_with(pg_config(dir.path(), &schema)).await;
    let b = TestServer::start_with(pg_config(dir.path(), &schema)).await;
    let (src, key) = a.source("shared").await;
    let rx = Receiver::start().await;
    hook(&a, &[&src], &rx).await;
    send(
        &a,
        &key,
        "track",
        json!({"userId": "pg-user", "event": "Seen"}),
    )
    .await;
    send(
        &a,
        &key,
        "track",
        json!({"userId": "pg-other", "event": "Seen"}),
    )
    .await;

    let id = regulate(&a, "SUPPRESS_WITH_DELETE", &["pg-user"], None).await;
    let detail = finished(&b, &id).await;
    assert_eq!(detail["subjectDetails"][0]["affectedSources"], json!([src]));
    assert_eq!(wait_deletes(&rx, 1).await.len(), 1);
    assert!(!stored_mentions(&a, &src, "pg-user").await);
    assert!(stored_mentions(&a, &src, "pg-other").await);

    // Node B learns of the source within its routing refresh, and of the
    // suppression within its sync interval: its calls for the user are
    // answered 200 and dropped.
    eventually(15, || async {
        let (status, _) = b
            .collect(
                "/v1/track",
                Some(&key),
                json!({"userId": "pg-ok", "event": "E"}).to_string(),
            )
            .await;
        (status == 200).then_some(())
    })
    .await;
    send(
        &b,
        &key,
        "track",
        json!({"userId": "pg-user", "event": "Again"}),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!stored_mentions(&a, &src, "pg-user").await);
    let (_, list) = b.admin(Method::GET, "/suppressions", None).await;
    assert_eq!(list["data"], json!(["pg-user"]));
    a.stop().await;
    b.stop().await;
}

/// The source-scoped deletion of `scoped.rs` on PostgreSQL: the purge's
/// mark brings the person's new values to the receiver.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_scoped_deletion_recomputes_traits_and_audiences_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let schema = format!("sluice_scoped_{}_{nanos}", std::process::id());
    let s = TestServer::start_with(pg_config(dir.path(), &schema)).await;
    super::scoped::recomputes_at_once(&s).await;
    s.stop().await;
}
