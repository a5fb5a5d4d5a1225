//! Node membership across nodes sharing the database.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sluice_store::{ClusterStore, Members};

fn at(secs: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_709_294_400 + secs, 0).expect("valid time")
}

const TTL: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_see_each_other_until_one_falls_silent_or_leaves() {
    let (schema, a) = super::fresh().await;
    let b = schema.open().await;
    let sql = schema.sql().await;
    let live = |list: &[&str]| Members {
        live: list.iter().map(|s| (*s).to_owned()).collect(),
        silent: Vec::new(),
    };
    assert_eq!(a.heartbeat("a", TTL).await.unwrap(), live(&["a"]));
    assert_eq!(b.heartbeat("b", TTL).await.unwrap(), live(&["a", "b"]));
    assert_eq!(a.heartbeat("a", TTL).await.unwrap(), live(&["a", "b"]));
    // b's last beat is now more than a TTL old: a killed node is silent.
    sql.execute(
        "UPDATE nodes SET heartbeat_at = heartbeat_at - 11000 WHERE id = 'b'",
        &[],
    )
    .await
    .unwrap();
    let seen = a.heartbeat("a", TTL).await.unwrap();
    assert_eq!(
        (seen.live, seen.silent),
        (vec!["a".into()], vec!["b".into()])
    );
    // It is live again with its next beat; leaving takes it out at once.
    assert_eq!(b.heartbeat("b", TTL).await.unwrap(), live(&["a", "b"]));
    b.leave("b").await.unwrap();
    assert_eq!(a.heartbeat("a", TTL).await.unwrap(), live(&["a"]));
    // A row silent for long is forgotten: the beat that deletes it still
    // reports it, the next one does not.
    b.heartbeat("b", TTL).await.unwrap();
    sql.execute(
        "UPDATE nodes SET heartbeat_at = heartbeat_at - 3600000 WHERE id = 'b'",
        &[],
    )
    .await
    .unwrap();
    // Not before its handed deliveries were restored: until then it stays,
    // however old (a lone node restarted long after a crash finds it).
    assert_eq!(a.heartbeat("a", TTL).await.unwrap().silent, ["b"]);
    assert_eq!(a.heartbeat("a", TTL).await.unwrap().silent, ["b"]);
    a.release_leases(&["b".to_owned()], Utc::now())
        .await
        .unwrap();
    assert_eq!(a.heartbeat("a", TTL).await.unwrap().silent, ["b"]);
    assert_eq!(a.heartbeat("a", TTL).await.unwrap(), live(&["a"]));
    b.close().await;
    a.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_out_nodes_leases_are_released_and_claimed_at_once() {
    use sluice_store::{DeliveryStore, EventStore};
    let (schema, a) = super::fresh().await;
    let b = schema.open().await;
    assert_ne!(
        a.node_id(),
        b.node_id(),
        "each store has a node id of its own"
    );
    a.append(super::request("src_1", &super::ids("m", 5), at(0)))
        .await
        .unwrap();
    let lease = Duration::from_secs(60);
    let held = a.claim_due(at(1), 10, lease).await.unwrap();
    assert_eq!(held.len(), 5);
    assert!(
        b.claim_due(at(2), 10, lease).await.unwrap().is_empty(),
        "leased to a"
    );
    // Releasing another node's leases, or b's own (none), frees nothing.
    assert_eq!(
        b.release_leases(&["node_other".to_owned()], at(3))
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        b.release_leases(&[b.node_id().to_owned()], at(3))
            .await
            .unwrap(),
        0
    );
    // a drops out: b releases a's leases and claims the deliveries long
    // before the 60 s lease would have ended.
    assert_eq!(
        b.release_leases(&[a.node_id().to_owned()], at(3))
            .await
            .unwrap(),
        5
    );
    let taken = b.claim_due(at(3), 10, lease).await.unwrap();
    let mut ids: Vec<i64> = taken.iter().map(|d| d.delivery_id).collect();
    let mut before: Vec<i64> = held.iter().map(|d| d.delivery_id).collect();
    ids.sort_unstable();
    before.sort_unstable();
    assert_eq!(ids, before, "the same deliveries, now b's");
    b.close().await;
    a.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_report_of_a_node_taken_for_gone_keeps_the_new_holders_lease() {
    use sluice_store::{DeliveryStore, EventStore};
    let (schema, a) = super::fresh().await;
    let b = schema.open().await;
    let c = schema.open().await;
    a.append(super::request("src_1", &super::ids("m", 1), at(0)))
        .await
        .unwrap();
    let lease = Duration::from_secs(60);
    let held = a.claim_due(at(1), 10, lease).await.unwrap();
    // a is taken for gone while still sending; b claims the delivery.
    assert_eq!(
        b.release_leases(&[a.node_id().to_owned()], at(2))
            .await
            .unwrap(),
        1
    );
    assert_eq!(b.claim_due(at(2), 10, lease).await.unwrap().len(), 1);

    // a's attempt failed; its report comes in while b sends.
    a.report(vec![retry_now(held[0].delivery_id, at(3))])
        .await
        .unwrap();
    assert!(
        c.claim_due(at(4), 10, lease).await.unwrap().is_empty(),
        "a third node took the delivery b is sending"
    );

    // b's own report ends its lease as always.
    b.report(vec![retry_now(held[0].delivery_id, at(5))])
        .await
        .unwrap();
    assert_eq!(c.claim_due(at(6), 10, lease).await.unwrap().len(), 1);
    for store in [a, b, c] {
        store.close().await;
    }
}

/// A report that a delivery is due again at once, with no attempt made.
fn retry_now(delivery_id: i64, now: DateTime<Utc>) -> sluice_store::AttemptReport {
    sluice_store::AttemptReport {
        delivery_id,
        at: now,
        attempts: Vec::new(),
        outcome: sluice_store::Outcome::Retry { at: now },
    }
}
