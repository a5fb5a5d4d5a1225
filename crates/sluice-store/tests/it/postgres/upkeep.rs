//! The pool's upkeep: idle connections closed, a newer schema refused.

use std::time::Duration;

use sluice_store::{CatalogStore, PostgresConfig, PostgresStore};

use super::TestSchema;

/// A store whose upkeep runs every 100 ms, with connections idle for
/// `idle` closed, under its own application name.
async fn store(schema: &TestSchema, idle: Duration, name: &str) -> PostgresStore {
    let mut config = PostgresConfig {
        upkeep_interval: Duration::from_millis(100),
        idle_timeout: idle,
        ..schema.config()
    };
    config.url = format!("{}?application_name={name}", config.url);
    PostgresStore::open(config).await.expect("open")
}

async fn connections(sql: &tokio_postgres::Client, name: &str) -> i64 {
    sql.query_one(
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1",
        &[&name],
    )
    .await
    .map_or(-1, |row| row.get(0))
}

/// The connections named `name` once they are `at_most`, or after 5 s.
async fn settles_at_most(sql: &tokio_postgres::Client, name: &str, at_most: i64) -> i64 {
    let mut left = connections(sql, name).await;
    for _ in 0..50 {
        if left <= at_most {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        left = connections(sql, name).await;
    }
    left
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_are_returned_to_the_server() {
    let schema = TestSchema::new();
    let name = format!("upkeep_idle_{:08x}", rand::random::<u32>());
    let store = store(&schema, Duration::from_millis(300), &name).await;
    let sql = schema.sql().await;
    // Four reads at once open several connections.
    let (a, b, c, d) = tokio::join!(
        store.get_meta("a"),
        store.get_meta("b"),
        store.get_meta("c"),
        store.get_meta("d")
    );
    for read in [a, b, c, d] {
        read.expect("read");
    }
    assert!(
        connections(&sql, &name).await >= 2,
        "the reads used one connection"
    );
    // All but the one the upkeep itself reads the schema version with.
    let left = settles_at_most(&sql, &name, 1).await;
    assert!(left <= 1, "{left} idle connections still open");
    // And the pool opens a new one when work comes back.
    store
        .get_meta("nothing")
        .await
        .expect("read after the idle close");
    store.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_stops_using_a_database_migrated_past_its_schema() {
    let schema = TestSchema::new();
    let name = format!("upkeep_schema_{:08x}", rand::random::<u32>());
    let store = store(&schema, Duration::from_secs(300), &name).await;
    store.get_meta("x").await.expect("works before");
    let sql = schema.sql().await;
    sql.batch_execute(
        "INSERT INTO schema_migrations (version, name)
         SELECT max(version) + 1, 'from a newer Sluice' FROM schema_migrations",
    )
    .await
    .expect("a newer migration");
    let mut refused = None;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if let Err(e) = store.get_meta("x").await {
            refused = Some(e.to_string());
            break;
        }
    }
    let refused = refused.expect("the store went on using a newer schema");
    assert!(
        refused.contains("newer than this Sluice knows"),
        "{refused}"
    );
    let left = settles_at_most(&sql, &name, 0).await;
    assert_eq!(left, 0, "connections kept open");
}
