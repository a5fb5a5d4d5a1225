//! PostgreSQL backend: what only a shared database has: several nodes,
//! concurrent start-up, migrations. The conformance suite runs on the stores
//! `fresh()` opens (`conformance::postgres`).
//!
//! Needs a server: `scripts/postgres-test-server.sh start`, then run with
//! `SLUICE_TEST_POSTGRES_URL=$(scripts/postgres-test-server.sh url)`. Each
//! test gets its own schema, dropped when the test ends.

use sluice_store::CatalogStore;
use sluice_store::EventStore;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sluice_store::{AppendRequest, NewEvent, PostgresConfig, PostgresStore, Store, StoreError};
use tokio_postgres::NoTls;

mod cluster;
mod hand_off;
mod local;
mod partitions;
mod pooler;
mod rowless;
mod tls;
mod upkeep;
mod usage;

const URL_VAR: &str = "SLUICE_TEST_POSTGRES_URL";

/// The test server's URL. Missing is a failure, never a skip: the feature
/// was asked for, so its tests must run.
fn url() -> String {
    std::env::var(URL_VAR).unwrap_or_else(|_| {
        panic!(
            "{URL_VAR} is not set. Start a test server and pass its URL:\n  \
             scripts/postgres-test-server.sh start\n  \
             {URL_VAR}=$(scripts/postgres-test-server.sh url) cargo test -p sluice-store --features postgres"
        )
    })
}

/// A schema private to one test, dropped (with its tables) on drop.
pub struct TestSchema {
    url: String,
    name: String,
}

impl TestSchema {
    pub(crate) fn new() -> TestSchema {
        TestSchema {
            url: url(),
            name: format!(
                "sluice_t_{}_{:016x}",
                std::process::id(),
                rand::random::<u64>()
            ),
        }
    }

    /// The schema's name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    fn config(&self) -> PostgresConfig {
        self.config_at(self.url.clone())
    }

    /// The store's settings for this schema on the server at `url`.
    fn config_at(&self, url: String) -> PostgresConfig {
        PostgresConfig {
            schema: Some(self.name.clone()),
            pool_size: 4,
            connect_timeout: Duration::from_secs(5),
            ..PostgresConfig::new(url)
        }
    }

    pub(crate) async fn open(&self) -> PostgresStore {
        self.open_at(self.url.clone()).await
    }

    /// Opens a store on this schema through `url`: the test server behind a
    /// relay of the test's own.
    pub(crate) async fn open_at(&self, url: String) -> PostgresStore {
        match PostgresStore::open(self.config_at(url)).await {
            Ok(store) => store,
            Err(e) => panic!("open postgres store at {URL_VAR}: {e}"),
        }
    }

    /// A plain connection to the test database, for checks behind the store.
    pub(crate) async fn sql(&self) -> tokio_postgres::Client {
        let (client, conn) = tokio_postgres::connect(&self.url, NoTls)
            .await
            .expect("connect to the test server");
        tokio::spawn(conn);
        client
            .batch_execute(&format!("SET search_path TO {}", self.name))
            .await
            .expect("set search_path");
        client
    }
}

impl Drop for TestSchema {
    /// Best effort, on a thread of its own since `drop` cannot await; a
    /// leftover schema only costs disk in a throwaway test database.
    fn drop(&mut self) {
        let (url, name) = (self.url.clone(), self.name.clone());
        let cleanup = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            runtime.block_on(async {
                let (client, conn) = tokio_postgres::connect(&url, NoTls).await.ok()?;
                tokio::spawn(conn);
                // Never wait long on locks: a connection of the test's own
                // runtime (blocked in this drop) may still hold some.
                let drop_schema =
                    format!("SET lock_timeout = '5s'; DROP SCHEMA IF EXISTS {name} CASCADE");
                client.batch_execute(&drop_schema).await.ok()
            })
        });
        let _ = cleanup.join();
    }
}

/// A new, empty store in its own schema (dropped with the guard).
pub async fn fresh() -> (TestSchema, PostgresStore) {
    let schema = TestSchema::new();
    let store = schema.open().await;
    (schema, store)
}

pub(crate) fn at(secs: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_709_294_400 + secs, 0).expect("valid time")
}

pub(crate) fn request(
    source_id: &str,
    message_ids: &[String],
    received_at: DateTime<Utc>,
) -> AppendRequest {
    AppendRequest {
        source_id: source_id.into(),
        received_at,
        events: message_ids
            .iter()
            .map(|m| NewEvent {
                message_id: m.clone(),
                event_type: "track".into(),
                body: format!(r#"{{"messageId":"{}"}}"#, m.escape_default()),
                destination_ids: vec!["dst_1".into()],
                ..NewEvent::default()
            })
            .collect(),
    }
}

pub(crate) fn ids(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_claiming_at_once_never_get_the_same_delivery() {
    const EVENTS: usize = 300;
    let schema = TestSchema::new();
    let node_a: Arc<dyn Store> = Arc::new(schema.open().await);
    let node_b: Arc<dyn Store> = Arc::new(schema.open().await);
    node_a
        .append(request("src_1", &ids("m", EVENTS), at(0)))
        .await
        .expect("append");

    let mut workers = tokio::task::JoinSet::new();
    for (node, worker) in [(&node_a, 0), (&node_b, 1), (&node_a, 2), (&node_b, 3)] {
        let node = node.clone();
        workers.spawn(async move {
            let mut claimed = Vec::new();
            loop {
                let due = node
                    .claim_due(at(1), 7, Duration::from_secs(60))
                    .await
                    .unwrap_or_else(|e| panic!("worker {worker} claim: {e}"));
                if due.is_empty() {
                    return claimed;
                }
                claimed.extend(due.into_iter().map(|d| d.delivery_id));
                tokio::task::yield_now().await;
            }
        });
    }
    let mut all = Vec::new();
    while let Some(claimed) = workers.join_next().await {
        all.extend(claimed.expect("worker task"));
    }
    let unique: HashSet<i64> = all.iter().copied().collect();
    assert_eq!(unique.len(), all.len(), "a delivery was handed out twice");
    assert_eq!(all.len(), EVENTS, "every due delivery is claimed once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_starting_together_apply_migrations_once() {
    let schema = TestSchema::new();
    let mut opening = tokio::task::JoinSet::new();
    for _ in 0..4 {
        let config = schema.config();
        opening.spawn(async move { PostgresStore::open(config).await });
    }
    while let Some(opened) = opening.join_next().await {
        let store = opened.expect("open task").expect("every node opens");
        store.close().await;
    }
    let rows = schema
        .sql()
        .await
        .query(
            "SELECT version FROM schema_migrations ORDER BY version",
            &[],
        )
        .await
        .expect("read schema_migrations");
    let versions: Vec<i32> = rows.iter().map(|r| r.get(0)).collect();
    let newest = versions.last().copied().unwrap_or(0);
    assert!(newest >= 20, "every migration ran: {versions:?}");
    assert_eq!(
        versions,
        (1..=newest).collect::<Vec<i32>>(),
        "each migration is recorded once"
    );
}

#[tokio::test]
async fn a_database_migrated_by_a_newer_sluice_is_refused() {
    let schema = TestSchema::new();
    schema.open().await.close().await;
    schema
        .sql()
        .await
        .execute(
            "INSERT INTO schema_migrations (version, name) VALUES (999, 'from the future')",
            &[],
        )
        .await
        .expect("insert");
    let refused = PostgresStore::open(schema.config()).await;
    let err = refused.err().expect("open must fail");
    assert!(err.to_string().contains("newer"), "got {err}");
}

#[tokio::test]
async fn data_survives_close_and_reopen() {
    let (schema, store) = fresh().await;
    store
        .append(request("src_1", &ids("m", 2), at(0)))
        .await
        .expect("append");
    store.put_meta_if_absent("k", "v").await.expect("meta");
    store.close().await;
    drop(store);

    let store = schema.open().await;
    let events = store
        .recent_events("src_1", None, 10)
        .await
        .expect("events");
    let stored: Vec<_> = events.iter().map(|e| e.message_id.as_str()).collect();
    assert_eq!(stored, vec!["m1", "m0"]);
    assert_eq!(
        store.get_meta("k").await.expect("meta").as_deref(),
        Some("v")
    );
}

#[tokio::test]
async fn calls_after_close_fail_as_closed() {
    let (_schema, store) = fresh().await;
    store.close().await;
    let write = store.append(request("src_1", &ids("m", 1), at(0))).await;
    assert!(matches!(write, Err(StoreError::Closed)), "got {write:?}");
    let read = store.list_sources().await;
    assert!(matches!(read, Err(StoreError::Closed)), "got {read:?}");
}

/// PostgreSQL text cannot hold NUL, so such an append fails inside its
/// group; the writer then retries the group's requests one by one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_append_does_not_fail_appends_grouped_with_it() {
    let (_schema, store) = fresh().await;
    let store = Arc::new(store);
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..40 {
        let store = store.clone();
        tasks.spawn(async move {
            let bad = i % 4 == 0;
            let id = if bad {
                format!("bad\u{0}{i}")
            } else {
                format!("m{i}")
            };
            let outcome = store.append(request("src_1", &[id], at(0))).await;
            (bad, outcome)
        });
    }
    while let Some(joined) = tasks.join_next().await {
        let (bad, outcome) = joined.expect("task");
        assert_eq!(outcome.is_err(), bad, "got {outcome:?} (bad: {bad})");
    }
    let events = store
        .recent_events("src_1", None, 100)
        .await
        .expect("events");
    assert_eq!(
        events.len(),
        30,
        "every good append commits despite failing neighbours"
    );
    let usage = store
        .usage("src_1", "2024-03-01", "2024-03-01")
        .await
        .expect("usage");
    assert_eq!(
        (usage[0].api_calls, usage[0].events),
        (30, 30),
        "failed calls are not counted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_pruning_at_once_delete_each_event_once() {
    let schema = TestSchema::new();
    let node_a = Arc::new(schema.open().await);
    let node_b = Arc::new(schema.open().await);
    for chunk in 0..10 {
        let no_destinations = AppendRequest {
            events: request("src_1", &ids(&format!("c{chunk}-"), 50), at(0))
                .events
                .into_iter()
                .map(|e| NewEvent {
                    destination_ids: vec![],
                    ..e
                })
                .collect(),
            ..request("src_1", &[], at(0))
        };
        node_a.append(no_destinations).await.expect("append");
    }
    let (a, b) = tokio::join!(node_a.prune(at(10)), node_b.prune(at(10)));
    let pruned = a.expect("prune a") + b.expect("prune b");
    assert_eq!(pruned, 500, "each old event is counted by exactly one node");
    let left = node_a
        .recent_events("src_1", None, 10)
        .await
        .expect("events");
    assert!(left.is_empty(), "left: {}", left.len());
}

/// Manual vacuums of `deliveries` so far (autovacuum counts apart).
async fn manual_vacuums(sql: &tokio_postgres::Client, schema: &str) -> i64 {
    sql.query_one(
        "SELECT vacuum_count FROM pg_stat_user_tables \
         WHERE schemaname = $1 AND relname = 'deliveries'",
        &[&schema],
    )
    .await
    .map_or(0, |row| row.get(0))
}

/// A store that vacuums after 20 settled deliveries, and a plain connection.
async fn vacuuming_store() -> (TestSchema, PostgresStore, tokio_postgres::Client) {
    let schema = TestSchema::new();
    let config = PostgresConfig {
        vacuum_after_settled: 20,
        ..schema.config()
    };
    let store = PostgresStore::open(config).await.expect("open");
    let sql = schema.sql().await;
    (schema, store, sql)
}

/// Reports every delivery of `due` as delivered.
async fn settle(store: &PostgresStore, due: &[sluice_store::DueDelivery], when: DateTime<Utc>) {
    use sluice_store::{AttemptReport, DeliveryStore, Outcome};
    let reports = due
        .iter()
        .map(|d| AttemptReport {
            delivery_id: d.delivery_id,
            at: when,
            attempts: Vec::new(),
            outcome: Outcome::Succeeded,
        })
        .collect();
    store.report(reports).await.expect("report");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drained_backlog_is_vacuumed_once_enough_deliveries_were_settled() {
    use sluice_store::DeliveryStore;
    let (schema, store, sql) = vacuuming_store().await;
    store
        .append(request("src_1", &ids("v", 30), at(0)))
        .await
        .expect("append");
    let lease = Duration::from_secs(60);
    // A full claim (30 due, 30 asked) is what a backlog looks like.
    let due = store.claim_due(at(1), 30, lease).await.expect("claim");
    assert_eq!(due.len(), 30);
    settle(&store, &due, at(2)).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        manual_vacuums(&sql, &schema.name).await,
        0,
        "not while full"
    );
    // 30 settled, and the next claim comes back short: one vacuum.
    let due = store.claim_due(at(3), 100, lease).await.expect("claim");
    assert!(due.is_empty());
    let mut vacuums = 0;
    for _ in 0..100 {
        vacuums = manual_vacuums(&sql, &schema.name).await;
        if vacuums > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(vacuums, 1, "the drained backlog was vacuumed once");
    // The count starts over: further short claims do not vacuum again.
    store.claim_due(at(4), 100, lease).await.expect("claim");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(manual_vacuums(&sql, &schema.name).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trickle_that_never_backs_up_is_never_vacuumed() {
    use sluice_store::DeliveryStore;
    let (schema, store, sql) = vacuuming_store().await;
    let lease = Duration::from_secs(60);
    for round in 0..6 {
        let prefix = format!("t{round}-");
        store
            .append(request("src_1", &ids(&prefix, 5), at(round)))
            .await
            .expect("append");
        let due = store
            .claim_due(at(round + 1), 100, lease)
            .await
            .expect("claim");
        assert_eq!(due.len(), 5, "every claim is short");
        settle(&store, &due, at(round + 1)).await;
    }
    // 30 settled, more than the 20 that earn a vacuum after a backlog.
    store.claim_due(at(10), 100, lease).await.expect("claim");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(manual_vacuums(&sql, &schema.name).await, 0);
}
