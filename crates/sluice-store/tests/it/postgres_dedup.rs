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

/// An event older than the window does not drop the next event with its
/// id; one within the window does, whichever side of a bucket's edge.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_id_is_remembered_for_the_window_and_no_longer() {
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
    assert_eq!((later.stored, later.duplicates), (1, 0), "past the window");
    // 36 h after the first: midnight, 11 h after m-0's second copy, which
    // is in the day before.
    let within = store
        .append(request("src_1", &ids("m", 3), at(36 * 3600)))
        .await
        .expect("append");
    assert_eq!(
        (within.stored, within.duplicates),
        (2, 1),
        "m-0 was stored 11 hours before, in the bucket before"
    );
    let other_source = store
        .append(request("src_2", &ids("m", 3), at(36 * 3600)))
        .await
        .expect("append");
    assert_eq!(other_source.stored, 3, "the source is part of the key");
}

/// The upgrade that moved the memory into `events` gives the window's
/// first copies a bucket; a resend of one of them is dropped, and an event
/// left without a bucket takes no part.
#[tokio::test]
async fn an_event_bucketed_by_the_upgrade_drops_its_resend() {
    let schema = TestSchema::new();
    let store = schema.open().await;
    let sql = schema.sql().await;
    // Events stored by a Sluice that kept its ids elsewhere: no bucket.
    // One is inside what the upgrade takes as the window, one before it.
    let start_of_window = at(0).timestamp_millis();
    for (id, received) in [
        ("m-upgraded", start_of_window),
        ("m-older", start_of_window - 1),
    ] {
        sql.execute(
            "INSERT INTO events (source_id, message_id, event_type, received_at, body)
             VALUES ('src_1', $1, 'track', $2, '{}')",
            &[&id, &received],
        )
        .await
        .expect("insert an event as before");
    }
    // What the upgrade does to the window's first copies.
    sql.execute(
        "UPDATE events SET dedup_bucket = received_at / 86400000
         WHERE seq IN (SELECT min(seq) FROM events WHERE received_at >= $1
                       GROUP BY message_id, source_id)",
        &[&start_of_window],
    )
    .await
    .expect("bucket as the upgrade does");
    let resend = store
        .append(request(
            "src_1",
            &["m-upgraded".to_owned(), "m-older".to_owned()],
            at(60),
        ))
        .await
        .expect("append");
    assert_eq!(
        (resend.stored, resend.duplicates),
        (1, 1),
        "m-upgraded is dropped; m-older, without a bucket, is stored"
    );
}

/// On a database whose `events` was never analysed (a new install), the
/// check looks each id up in the unique index: it never walks the source's
/// events (`events_source_seq`), which made each call of a group read every
/// event of its source until the table was first analysed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_database_checks_each_id_in_the_unique_index_not_the_sources_events() {
    let schema = TestSchema::new();
    let store = schema.open().await;
    for round in 0..20 {
        store
            .append(request("src_1", &ids(&format!("r{round}-"), 50), at(round)))
            .await
            .expect("append");
    }
    store.close().await;
    drop(store);
    // A connection's index counts reach the statistics when it ends.
    let sql = schema.sql().await;
    let read = |index: &'static str| {
        let sql = &sql;
        async move {
            let row = sql
                .query_one(
                    "SELECT idx_scan, idx_tup_read FROM pg_stat_user_indexes
                     WHERE schemaname = current_schema() AND indexrelname = $1",
                    &[&index],
                )
                .await
                .expect("index statistics");
            (row.get::<_, i64>(0), row.get::<_, i64>(1))
        }
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while read("events_message_id_once").await.0 < 20 * 50 && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(
        read("events_message_id_once").await.0 >= 20 * 50,
        "every id was looked up in the unique index"
    );
    assert_eq!(read("events_source_seq").await, (0, 0));
}
