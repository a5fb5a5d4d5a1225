//! Deliveries leased at ingest to one node's engine: no other node's claim
//! takes them (the rest of the contract is in the conformance suite).

use std::time::Duration;

use chrono::Utc;
use sluice_store::local::LocalDelivery;
use sluice_store::{DeliveryStore, EventStore};

use super::{TestSchema, at, ids, request};

const LEASE: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_node_never_claims_a_delivery_leased_at_ingest() {
    let schema = TestSchema::new();
    let node_a = schema.open().await;
    let node_b = schema.open().await;
    let (local, mut handed) = LocalDelivery::new(2, LEASE);
    assert!(node_a.deliver_locally(local));
    node_a
        .append(request("src_a", &ids("m", 3), at(0)))
        .await
        .expect("append");
    let batch = handed.try_recv().expect("two deliveries handed over");
    assert_eq!(batch.len(), 2);
    let claimed = node_b
        .claim_due(Utc::now(), 10, LEASE)
        .await
        .expect("claim");
    let claimed: Vec<&str> = claimed.iter().map(|d| d.message_id.as_str()).collect();
    assert_eq!(claimed, ["m2"]);
}
