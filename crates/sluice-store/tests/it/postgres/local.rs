//! Deliveries leased at ingest to the node's own engine: handed over after
//! the commit, within the engine's room, and never claimed by anyone.

use std::time::Duration;

use chrono::Utc;
use sluice_store::local::LocalDelivery;
use sluice_store::{
    AttemptReport, DeliveryFilter, DeliveryState, DeliveryStore, EventStore, Outcome,
};

use super::{TestSchema, at, ids, request};

const LEASE: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliveries_leased_at_ingest_reach_the_engine_and_no_claim() {
    let schema = TestSchema::new();
    let node_a = schema.open().await;
    let node_b = schema.open().await;
    let (local, mut handed) = LocalDelivery::new(2, LEASE);
    assert!(node_a.deliver_locally(local.clone()));
    assert!(
        !node_a.deliver_locally(LocalDelivery::new(2, LEASE).0),
        "one engine per store"
    );

    let appended = node_a
        .append(request("src_a", &ids("m", 3), at(0)))
        .await
        .expect("append");
    assert_eq!((appended.stored, appended.handed), (3, false));
    let batch = handed.try_recv().expect("two deliveries handed over");
    let got: Vec<(&str, &str, u32)> = batch
        .iter()
        .map(|h| {
            (
                h.due.message_id.as_str(),
                h.due.event_body.as_str(),
                h.due.attempts,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("m0", r#"{"messageId":"m0"}"#, 0),
            ("m1", r#"{"messageId":"m1"}"#, 0)
        ]
    );
    assert_eq!(local.room(), 0, "each handed delivery holds its unit");

    // Neither node's claim sees the leased rows: only the third is due.
    let claimed_b = node_b
        .claim_due(Utc::now(), 10, LEASE)
        .await
        .expect("claim");
    let claimed_a = node_a
        .claim_due(Utc::now(), 10, LEASE)
        .await
        .expect("claim");
    let claimed: Vec<&str> = (claimed_a.iter().chain(&claimed_b))
        .map(|d| d.message_id.as_str())
        .collect();
    assert_eq!(claimed, ["m2"]);

    // A report settles a handed delivery as it settles a claimed one, and
    // the engine's room comes back as it lets go of them.
    let reports = batch
        .iter()
        .map(|h| AttemptReport {
            delivery_id: h.due.delivery_id,
            at: Utc::now(),
            attempts: Vec::new(),
            outcome: Outcome::Succeeded,
        })
        .collect();
    node_a.report(reports).await.expect("report");
    drop(batch);
    assert_eq!(local.room(), 2);
    let succeeded = DeliveryFilter {
        state: Some(DeliveryState::Succeeded),
        limit: 50,
        ..DeliveryFilter::default()
    };
    let listed = node_b.list_deliveries(&succeeded).await.expect("list");
    assert_eq!(listed.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_leased_whole_needs_no_wake_and_a_shut_door_leases_nothing() {
    let schema = TestSchema::new();
    let store = schema.open().await;
    let (local, mut handed) = LocalDelivery::new(16, LEASE);
    assert!(store.deliver_locally(local.clone()));

    let whole = store
        .append(request("src_a", &ids("w", 2), at(0)))
        .await
        .expect("append");
    assert!(whole.handed);
    assert_eq!(handed.try_recv().map(|b| b.len()).ok(), Some(2));

    // The engine drains a backlog: fresh calls queue behind it.
    local.open(false);
    let queued = store
        .append(request("src_a", &ids("q", 2), at(1)))
        .await
        .expect("append");
    assert!(!queued.handed);
    assert!(handed.try_recv().is_err());
    let claimed = store.claim_due(Utc::now(), 10, LEASE).await.expect("claim");
    assert_eq!(claimed.len(), 2);

    // Once the engine has stopped, nothing is leased to it any more.
    local.open(true);
    drop(handed);
    let after = store
        .append(request("src_a", &ids("s", 1), at(2)))
        .await
        .expect("append");
    assert!(!after.handed);
    let claimed = store.claim_due(Utc::now(), 10, LEASE).await.expect("claim");
    assert_eq!(claimed.len(), 1);
}
