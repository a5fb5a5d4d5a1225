//! Deliveries handed to a node's engine at ingest without a row: the row
//! is written once, with the outcome; a silent node's are written for
//! claims by the others, and one with no report within its lease by its
//! own node.

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use sluice_store::local::{Handed, LocalDelivery};
use sluice_store::{
    Attempt, AttemptReport, ClusterStore, DeliveryState, DeliveryStore, EventStore, Outcome,
    PostgresStore,
};
use tokio::sync::mpsc::UnboundedReceiver;

use super::{TestSchema, at, ids, request};

const LEASE: Duration = Duration::from_secs(60);
const TTL: Duration = Duration::from_secs(8);

async fn count(sql: &tokio_postgres::Client, query: &str) -> i64 {
    sql.query_one(query, &[]).await.expect(query).get(0)
}

fn attempt(delivery_id: i64, at: DateTime<Utc>, status: u16) -> Attempt {
    Attempt {
        delivery_id,
        attempt: 1,
        at,
        url: "https://example.com/hook".into(),
        status: Some(status),
        error: None,
        latency_ms: 3,
        response: None,
    }
}

/// Appends `n` calls through `node` and returns what its engine got.
async fn hand(
    node: &PostgresStore,
    handed: &mut UnboundedReceiver<Vec<Handed>>,
    prefix: &str,
    n: usize,
) -> Vec<Handed> {
    node.append(request("src_r", &ids(prefix, n), Utc::now()))
        .await
        .expect("append");
    let batch = handed.try_recv().expect("handed over");
    assert_eq!(batch.len(), n, "every delivery went to the engine");
    batch
}

async fn claim_all(node: &PostgresStore, want: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut claimed = Vec::new();
    while claimed.len() < want && Instant::now() < deadline {
        let due = node.claim_due(Utc::now(), 10, LEASE).await.expect("claim");
        claimed.extend(due.into_iter().map(|d| d.message_id));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    claimed.sort();
    claimed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_handed_at_ingest_gets_its_row_only_with_its_outcome() {
    let schema = TestSchema::new();
    let node = schema.open().await;
    let sql = schema.sql().await;
    let (local, mut handed) = LocalDelivery::new(4, LEASE);
    assert!(node.deliver_locally(local));
    let id = node.node_id().to_owned();
    node.heartbeat(&id, TTL).await.expect("beat");
    let batch = hand(&node, &mut handed, "h", 2).await;
    assert_eq!(count(&sql, "SELECT count(*) FROM deliveries").await, 0);

    let (sent, retried) = (&batch[0].due, &batch[1].due);
    let tries = vec![attempt(sent.delivery_id, at(1), 200)];
    let failed = vec![attempt(retried.delivery_id, at(1), 503)];
    node.report(vec![
        AttemptReport {
            delivery_id: sent.delivery_id,
            at: at(1),
            attempts: tries.clone(),
            outcome: Outcome::Succeeded,
        },
        AttemptReport {
            delivery_id: retried.delivery_id,
            at: at(1),
            attempts: failed.clone(),
            outcome: Outcome::Retry { at: at(30) },
        },
    ])
    .await
    .expect("report");

    let done = (node.get_delivery(sent.delivery_id).await)
        .expect("get")
        .expect("written with its outcome");
    assert_eq!(done.state, DeliveryState::Succeeded);
    assert_eq!((done.attempts, done.first_attempt_at), (1, Some(at(1))));
    assert_eq!(done.message_id, sent.message_id);
    assert_eq!(node.list_attempts(sent.delivery_id).await.unwrap(), tries);
    let pending = (node.get_delivery(retried.delivery_id).await)
        .expect("get")
        .expect("written with its outcome");
    assert_eq!(pending.state, DeliveryState::Pending);
    assert_eq!(
        node.list_attempts(retried.delivery_id).await.unwrap(),
        failed
    );
    assert_eq!(count(&sql, "SELECT count(*) FROM deliveries").await, 2);
    // The retry is due at its time, and claimed as any pending row.
    assert!(node.claim_due(at(29), 10, LEASE).await.unwrap().is_empty());
    let due = node.claim_due(at(30), 10, LEASE).await.unwrap();
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].delivery_id, retried.delivery_id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_nodes_handed_deliveries_are_written_for_the_others_claims() {
    let schema = TestSchema::new();
    let node_a = schema.open().await;
    let node_b = schema.open().await;
    let (local, mut handed) = LocalDelivery::new(8, LEASE);
    assert!(node_a.deliver_locally(local));
    let a = node_a.node_id().to_owned();
    node_a.heartbeat(&a, TTL).await.expect("beat");
    // Reported before the next beat: settled, under the floor it writes.
    let settled = hand(&node_a, &mut handed, "s", 2).await;
    let reports = settled
        .iter()
        .map(|h| AttemptReport {
            delivery_id: h.due.delivery_id,
            at: at(1),
            attempts: vec![attempt(h.due.delivery_id, at(1), 200)],
            outcome: Outcome::Succeeded,
        })
        .collect();
    node_a.report(reports).await.expect("report");
    node_a.heartbeat(&a, TTL).await.expect("beat");
    let unsent = hand(&node_a, &mut handed, "u", 3).await;
    assert!(
        node_b
            .claim_due(Utc::now(), 10, LEASE)
            .await
            .unwrap()
            .is_empty()
    );

    // Node A falls silent with three sends it never reported.
    let released = node_b
        .release_leases(std::slice::from_ref(&a), Utc::now())
        .await;
    assert_eq!(released.expect("release"), 3);
    assert_eq!(claim_all(&node_b, 3).await, ["u0", "u1", "u2"]);
    assert_eq!(
        node_b
            .release_leases(std::slice::from_ref(&a), Utc::now())
            .await
            .unwrap(),
        0,
        "written once"
    );

    // A was alive after all: its report settles the row B claimed, and
    // B's lease on it stays.
    let late = &unsent[0].due;
    node_a
        .report(vec![AttemptReport {
            delivery_id: late.delivery_id,
            at: Utc::now(),
            attempts: vec![attempt(late.delivery_id, Utc::now(), 200)],
            outcome: Outcome::Succeeded,
        }])
        .await
        .expect("report");
    let row = node_a
        .get_delivery(late.delivery_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.state, DeliveryState::Succeeded);
    for h in &settled {
        let row = node_a
            .get_delivery(h.due.delivery_id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(row.state, DeliveryState::Succeeded, "not restored");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handed_delivery_with_no_report_within_its_lease_is_written_for_claims() {
    let schema = TestSchema::new();
    let node_a = schema.open().await;
    let node_b = schema.open().await;
    let (local, mut handed) = LocalDelivery::new(4, Duration::from_millis(200));
    assert!(node_a.deliver_locally(local));
    let a = node_a.node_id().to_owned();
    node_a.heartbeat(&a, TTL).await.expect("beat");
    let _dropped = hand(&node_a, &mut handed, "o", 2).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The beat finds them overdue and writes them in the background.
    node_a.heartbeat(&a, TTL).await.expect("beat");
    assert_eq!(claim_all(&node_b, 2).await, ["o0", "o1"]);
}

/// A node killed with sends it never reported, and nobody running until
/// its row is far past the age at which silent rows are forgotten (a lone
/// node restarted a quarter of an hour after a crash): the row stays until
/// its deliveries are restored, and they are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_silent_nodes_row_stays_until_its_handed_deliveries_are_written() {
    let schema = TestSchema::new();
    let node_a = schema.open().await;
    let (local, mut handed) = LocalDelivery::new(4, LEASE);
    assert!(node_a.deliver_locally(local));
    let a = node_a.node_id().to_owned();
    node_a.heartbeat(&a, TTL).await.expect("beat");
    let _unsent = hand(&node_a, &mut handed, "k", 2).await;
    drop(node_a);
    let sql = schema.sql().await;
    sql.execute(
        "UPDATE nodes SET heartbeat_at = heartbeat_at - 3600000 WHERE id = $1",
        &[&a],
    )
    .await
    .expect("age the row");

    let node_b = schema.open().await;
    let b = node_b.node_id().to_owned();
    for _ in 0..2 {
        let members = node_b.heartbeat(&b, TTL).await.expect("beat");
        assert_eq!(
            members.silent,
            std::slice::from_ref(&a),
            "kept, not forgotten"
        );
    }
    let restored = node_b.release_leases(std::slice::from_ref(&a), Utc::now());
    assert_eq!(restored.await.expect("release"), 2);
    assert_eq!(claim_all(&node_b, 2).await, ["k0", "k1"]);
    // Restored, the row goes at the next beat.
    node_b.heartbeat(&b, TTL).await.expect("beat");
    assert!(
        node_b
            .heartbeat(&b, TTL)
            .await
            .expect("beat")
            .silent
            .is_empty()
    );
}

/// Before its first beat, and once its beats have failed for half a
/// time-to-live, a node's row cannot tell the others what it hands: its
/// ingest leases rows instead, which a claim takes once the lease ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_without_a_recent_beat_leases_rows_instead_of_handing_without_one() {
    let schema = TestSchema::new();
    let node = schema.open().await;
    let sql = schema.sql().await;
    let (local, mut handed) = LocalDelivery::new(8, LEASE);
    assert!(node.deliver_locally(local));
    let id = node.node_id().to_owned();
    let leased = format!("SELECT count(*) FROM deliveries WHERE lease_owner = '{id}'");

    let _before = hand(&node, &mut handed, "b", 2).await;
    assert_eq!(count(&sql, &leased).await, 2, "no beat yet: rows leased");

    let short = Duration::from_millis(400);
    node.heartbeat(&id, short).await.expect("beat");
    let _beating = hand(&node, &mut handed, "r", 2).await;
    assert_eq!(
        count(&sql, &leased).await,
        2,
        "beating: handed without rows"
    );

    tokio::time::sleep(short / 2).await;
    let _stale = hand(&node, &mut handed, "s", 2).await;
    assert_eq!(
        count(&sql, &leased).await,
        4,
        "no beat for half a ttl: rows leased"
    );
}
