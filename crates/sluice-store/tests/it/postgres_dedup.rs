//! Deduplication across PostgreSQL nodes: the check is in the database.

use std::sync::Arc;

use sluice_store::EventStore;

use crate::postgres::{TestSchema, at, ids, request};

/// Two nodes take the same resent batches at once: each message id is
/// stored by exactly one of them, and the other counts a duplicate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_taking_one_batch_at_once_store_each_message_id_once() {
    let schema = TestSchema::new();
    let node_a = Arc::new(schema.open().await);
    let node_b = Arc::new(schema.open().await);
    let mut tasks = tokio::task::JoinSet::new();
    for round in 0..10 {
        // Each batch in its own order, so the nodes' claims interleave.
        let mut batch = ids("m", 50);
        batch.rotate_left(round * 5);
        for node in [node_a.clone(), node_b.clone()] {
            let batch = batch.clone();
            tasks.spawn(async move { node.append(request("src_1", &batch, at(0))).await });
        }
    }
    let (mut stored, mut duplicates) = (0, 0);
    while let Some(joined) = tasks.join_next().await {
        let outcome = joined.expect("task").expect("append");
        stored += outcome.stored;
        duplicates += outcome.duplicates;
    }
    assert_eq!((stored, duplicates), (50, 950));
    let events = node_a
        .recent_events("src_1", None, 1000)
        .await
        .expect("events");
    assert_eq!(events.len(), 50);
    let usage = node_b
        .usage("src_1", "2024-03-01", "2024-03-01")
        .await
        .expect("usage");
    assert_eq!((usage[0].events, usage[0].duplicates), (50, 950));
}

/// A row older than the window is taken over by the next event with its
/// id, whether or not a node trimmed it yet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_row_does_not_drop_the_next_event_with_its_id() {
    let schema = TestSchema::new();
    let store = schema.open().await;
    store
        .append(request("src_1", &ids("m", 3), at(0)))
        .await
        .expect("append");
    let later = store
        .append(request("src_1", &ids("m", 1), at(25 * 3600)))
        .await
        .expect("append");
    assert_eq!((later.stored, later.duplicates), (1, 0));
    let sql = schema.sql().await;
    let rows: i64 = sql
        .query_one("SELECT count(*) FROM message_keys", &[])
        .await
        .expect("count")
        .get(0);
    assert_eq!(rows, 3, "one row per (source, message id)");
}

/// The upgrade to keys carries the window's rows over by computing each
/// key in SQL; ingest computes it in Rust. A row keyed the upgrade's way
/// must drop the resend, or an upgrade would let resends through.
#[tokio::test]
async fn a_key_made_by_the_upgrade_drops_the_resend_ingest_sees() {
    let schema = TestSchema::new();
    let store = schema.open().await;
    let sql = schema.sql().await;
    let received = at(0).timestamp_millis();
    sql.execute(
        "INSERT INTO message_keys (key, received_at)
         SELECT encode(substring(sha256(convert_to($1::text, 'UTF8') || '\\x00'::bytea
                                        || convert_to($2::text, 'UTF8')) FROM 1 FOR 16), 'hex')::uuid, $3",
        &[&"src_1", &"m-upgraded", &received],
    )
    .await
    .expect("insert a key as the upgrade does");
    let resend = store
        .append(request("src_1", &["m-upgraded".to_owned()], at(60)))
        .await
        .expect("append");
    assert_eq!((resend.stored, resend.duplicates), (0, 1));
}
