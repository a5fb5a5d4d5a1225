//! Connection poolers in front of the database: session pooling works,
//! transaction pooling is refused at start with the reason.

use std::time::Duration;

use sluice_store::{CatalogStore, ErrorKind, EventStore, PostgresConfig, PostgresStore};

use super::{TestSchema, at, ids, request};

/// The URL of a PgBouncer in `mode` in front of the test server. Missing is
/// a failure, never a skip (see `scripts/postgres-test-server.sh pooler`).
fn pooler_url(mode: &str) -> String {
    let var = format!("SLUICE_TEST_POOLER_{}_URL", mode.to_uppercase());
    std::env::var(&var).unwrap_or_else(|_| {
        panic!("{var} is not set: export {var}=$(scripts/postgres-test-server.sh pooler {mode})")
    })
}

fn config(url: String, schema: &TestSchema) -> PostgresConfig {
    PostgresConfig {
        schema: Some(schema.name().to_owned()),
        pool_size: 4,
        connect_timeout: Duration::from_secs(5),
        ..PostgresConfig::new(url)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_behind_a_transaction_pooler_refuses_to_open_and_says_why() {
    let schema = TestSchema::new();
    let opened = PostgresStore::open(config(pooler_url("transaction"), &schema)).await;
    let Err(e) = opened else {
        panic!("opened behind a transaction-mode pooler")
    };
    assert_eq!(e.kind(), Some(ErrorKind::Config), "{e}");
    let text = e.to_string();
    assert!(text.contains("transaction mode"), "{text}");
    assert!(text.contains("pool_mode = session"), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_behind_a_session_pooler_works() {
    let schema = TestSchema::new();
    let store = PostgresStore::open(config(pooler_url("session"), &schema))
        .await
        .expect("open behind a session pooler");
    store
        .append(request("src_p", &ids("p", 3), at(0)))
        .await
        .expect("append");
    let day = at(0).format("%Y-%m-%d").to_string();
    let usage = store.usage("src_p", &day, &day).await.expect("usage");
    assert_eq!(usage[0].events, 3);
    assert!(store.list_sources().await.expect("list").is_empty());
    store.close().await;
}
