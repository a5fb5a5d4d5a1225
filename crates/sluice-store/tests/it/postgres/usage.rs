//! Usage counters on several nodes: the stored calls are counted from the
//! events by one node at a time, what they cannot count (requests with no
//! stored call, repeats) by ingest into each node's rows; reads add them
//! up, together with the calls not counted yet.

use std::time::Duration;

use sluice_store::{CatalogStore, EventStore, NewSource};

use super::{TestSchema, at, ids, request};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_of_two_nodes_is_exact_before_and_after_it_is_counted_from_the_events() {
    let schema = TestSchema::new();
    let node_a = schema.open().await;
    let node_b = schema.open().await;
    node_a
        .create_source(NewSource {
            id: "src_u".into(),
            name: "Usage".into(),
            enabled: true,
            write_key_hash: "hash".into(),
            write_key_hint: "writ…".into(),
        })
        .await
        .expect("create source");
    for round in 0..3 {
        node_a
            .append(request("src_u", &ids(&format!("a{round}-"), 4), at(0)))
            .await
            .expect("append on a");
        node_b
            .append(request("src_u", &ids(&format!("b{round}-"), 2), at(0)))
            .await
            .expect("append on b");
    }
    // A request of repeats only, and one with a repeat beside a new call.
    node_a
        .append(request("src_u", &ids("a0-", 2), at(0)))
        .await
        .expect("repeats");
    let mut mixed = ids("b0-", 1);
    mixed.push("new".into());
    node_b
        .append(request("src_u", &mixed, at(0)))
        .await
        .expect("a repeat and a new call");

    let day = at(0).format("%Y-%m-%d").to_string();
    let expect = |label: &str, usage: &[sluice_store::UsageDay]| {
        assert_eq!(usage.len(), 1, "{label}: one day: {usage:?}");
        let u = &usage[0];
        assert_eq!(
            (u.api_calls, u.events, u.duplicates),
            (8, 19, 3),
            "{label}: every request once, every stored call once, every repeat once"
        );
    };
    // Read at once: the calls are in usage whether or not counted yet.
    for node in [&node_a, &node_b] {
        expect(
            "at once",
            &node.usage("src_u", &day, &day).await.expect("usage"),
        );
    }

    // Ingest wrote counter rows only for what the events cannot say: the
    // repeats, and the two requests whose first call was one.
    let sql = schema.sql().await;
    let row = sql
        .query_one(
            "SELECT coalesce(sum(api_calls), 0)::bigint, coalesce(sum(events), 0)::bigint,
                    coalesce(sum(duplicates), 0)::bigint, count(*)
             FROM usage WHERE source_id = 'src_u' AND shard >= 0",
            &[],
        )
        .await
        .expect("ingest's rows");
    let ingest: (i64, i64, i64, i64) = (row.get(0), row.get(1), row.get(2), row.get(3));
    assert_eq!((ingest.0, ingest.1, ingest.2), (2, 0, 3), "{ingest:?}");
    assert!(ingest.3 <= 2, "at most a row per node: {ingest:?}");

    // Once a round has walked past every call, the counted row holds them
    // and reads still count each once.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let row = sql
            .query_opt(
                "SELECT api_calls, events FROM usage WHERE source_id = 'src_u' AND shard = -1",
                &[],
            )
            .await
            .expect("counted row");
        if let Some(row) = row
            && (row.get::<_, i64>(0), row.get::<_, i64>(1)) == (6, 19)
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the calls were not counted from the events within 20 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for node in [&node_a, &node_b] {
        expect(
            "counted",
            &node.usage("src_u", &day, &day).await.expect("usage"),
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_sources_uncounted_calls_are_never_counted() {
    let schema = TestSchema::new();
    let node = schema.open().await;
    for id in ["src_gone", "src_kept"] {
        node.create_source(NewSource {
            id: id.into(),
            name: id.into(),
            enabled: true,
            write_key_hash: format!("hash-{id}"),
            write_key_hint: "writ…".into(),
        })
        .await
        .expect("create source");
        node.append(request(id, &ids("m", 3), at(0)))
            .await
            .expect("append");
    }
    assert!(node.delete_source("src_gone").await.expect("delete"));

    // Wait until a round has moved the cursor past every call.
    let sql = schema.sql().await;
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let past: bool = sql
            .query_one(
                "SELECT (SELECT xact FROM usage_read) > (SELECT max(xact) FROM events)",
                &[],
            )
            .await
            .expect("cursor")
            .get(0);
        if past {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no round within 20 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let counted: Vec<(String, i64)> = sql
        .query(
            "SELECT source_id, events FROM usage ORDER BY source_id",
            &[],
        )
        .await
        .expect("usage rows")
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    assert_eq!(counted, vec![("src_kept".to_owned(), 3)]);
    let day = at(0).format("%Y-%m-%d").to_string();
    let gone = node.usage("src_gone", &day, &day).await.expect("usage");
    assert!(gone.is_empty(), "{gone:?}");
}
