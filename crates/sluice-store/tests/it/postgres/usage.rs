//! Usage counters on several nodes: each node counts into rows of its own,
//! reads add them up.

use sluice_store::EventStore;

use super::{TestSchema, at, ids, request};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_counted_by_two_nodes_adds_up_and_no_row_is_shared() {
    let schema = TestSchema::new();
    let node_a = schema.open().await;
    let node_b = schema.open().await;
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
    let day = at(0).format("%Y-%m-%d").to_string();
    for node in [&node_a, &node_b] {
        let usage = node.usage("src_u", &day, &day).await.expect("usage");
        assert_eq!(usage.len(), 1, "one day: {usage:?}");
        assert_eq!(usage[0].api_calls, 6);
        assert_eq!(usage[0].events, 18);
    }
    let sql = schema.sql().await;
    let rows = sql
        .query(
            "SELECT shard, api_calls FROM usage WHERE source_id = 'src_u'",
            &[],
        )
        .await
        .expect("read usage rows");
    // Two nodes draw distinct shards almost always (1 in 1024 they share
    // one, and the sum above still holds); each row holds one node's calls.
    if rows.len() == 2 {
        let mut calls: Vec<i64> = rows.iter().map(|r| r.get(1)).collect();
        calls.sort_unstable();
        assert_eq!(calls, vec![3, 3], "each node's three calls in its own row");
    } else {
        assert_eq!(rows.len(), 1, "at most one row per node");
    }
}
