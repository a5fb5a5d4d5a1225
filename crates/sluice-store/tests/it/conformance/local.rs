//! Deliveries leased at ingest to the node's own engine: handed over once
//! committed, within the engine's room, and never claimed.

use std::time::Duration;

use chrono::Utc;
use sluice_store::local::LocalDelivery;
use sluice_store::{AppendRequest, Appended, DeliveryFilter, DeliveryState, NewEvent, Outcome};

use super::support::{Shared, at, deliveries, event, report};

const LEASE: Duration = Duration::from_secs(60);

async fn append(store: &Shared, secs: i64, events: Vec<NewEvent>) -> Appended {
    let request = AppendRequest {
        source_id: "src_a".into(),
        received_at: at(secs),
        events,
    };
    store.append(request).await.expect("append")
}

async fn claimable(store: &Shared) -> Vec<String> {
    let due = store.claim_due(Utc::now(), 10, LEASE).await.expect("claim");
    due.into_iter().map(|d| d.message_id).collect()
}

pub async fn deliveries_leased_at_ingest_reach_the_engine_and_no_claim(store: Shared) {
    let (local, mut handed) = LocalDelivery::new(2, LEASE);
    assert!(store.deliver_locally(local.clone()));
    let (other, _rx) = LocalDelivery::new(2, LEASE);
    assert!(!store.deliver_locally(other), "one engine per store");

    let mut own = event("m0", &["dst_1", "dst_2"]);
    own.bodies = vec![("dst_2".into(), r#"{"own":true}"#.into())];
    let appended = append(&store, 0, vec![own, event("m1", &["dst_1"])]).await;
    assert_eq!((appended.stored, appended.handed), (2, false));
    let batch = handed.try_recv().expect("two deliveries handed over");
    let got: Vec<(&str, &str, &str, u32)> = batch
        .iter()
        .map(|h| {
            let d = &h.due;
            (
                d.message_id.as_str(),
                d.destination_id.as_str(),
                d.event_body.as_str(),
                d.attempts,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("m0", "dst_1", r#"{"messageId":"m0","type":"track"}"#, 0),
            ("m0", "dst_2", r#"{"own":true}"#, 0)
        ]
    );
    assert_eq!(batch[0].due.received_at, at(0));
    assert_eq!(local.room(), 0, "each handed delivery holds its unit");
    assert_eq!(
        claimable(&store).await,
        ["m1"],
        "the rest is left to claims"
    );

    // A report settles a handed delivery as it settles a claimed one, and
    // the room comes back as the engine lets go of them.
    let reports = (batch.iter())
        .map(|h| report(h.due.delivery_id, 1, Utc::now(), 200, Outcome::Succeeded))
        .collect();
    store.report(reports).await.expect("report");
    drop(batch);
    assert_eq!(local.room(), 2);
    let succeeded = DeliveryFilter {
        state: Some(DeliveryState::Succeeded),
        ..DeliveryFilter::default()
    };
    assert_eq!(deliveries(&store, succeeded).await.len(), 2);
}

pub async fn a_call_leased_whole_needs_no_wake_and_a_shut_door_leases_nothing(store: Shared) {
    let (local, mut handed) = LocalDelivery::new(16, LEASE);
    assert!(store.deliver_locally(local.clone()));
    let whole = append(
        &store,
        0,
        vec![event("w0", &["dst_1"]), event("w1", &["dst_1"])],
    )
    .await;
    assert!(whole.handed);
    assert_eq!(handed.try_recv().map(|b| b.len()).ok(), Some(2));
    assert!(claimable(&store).await.is_empty());

    // The engine drains a backlog: fresh calls queue behind it.
    local.open(false);
    let queued = append(&store, 1, vec![event("q0", &["dst_1"])]).await;
    assert!(!queued.handed);
    assert!(handed.try_recv().is_err());
    assert_eq!(claimable(&store).await, ["q0"]);

    // Once the engine has stopped, nothing is leased to it any more.
    local.open(true);
    drop(handed);
    let after = append(&store, 2, vec![event("s0", &["dst_1"])]).await;
    assert!(!after.handed);
    assert_eq!(claimable(&store).await, ["s0"]);
    assert_eq!(local.room(), 16);
}

pub async fn a_call_whose_caller_stopped_waiting_is_still_handed_over(store: Shared) {
    let (local, mut handed) = LocalDelivery::new(16, LEASE);
    assert!(store.deliver_locally(local.clone()));
    // The caller gives up at once, as a request whose time ran out does,
    // after its call reached the store's queue. A store that answers
    // within that first look is asked again, until one caller is gone.
    let mut gone = None;
    for i in 0..50 {
        let id = format!("gone-{i}");
        let request = AppendRequest {
            source_id: "src_a".into(),
            received_at: at(0),
            events: vec![event(&id, &["dst_1"])],
        };
        if tokio::time::timeout(Duration::ZERO, store.append(request))
            .await
            .is_err()
        {
            gone = Some(id);
            break;
        }
        // Answered in time (a zero timeout fires at the timer's next tick,
        // not at once): the engine's end takes what was handed over, so
        // the room it used comes back and the next call is leased too.
        while handed.try_recv().is_ok() {}
    }
    let gone = gone.expect("a caller stopped waiting");
    let found = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(batch) = handed.recv().await {
            if batch.iter().any(|h| h.due.message_id == gone) {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(found, Ok(true), "the committed call is handed over");
    assert!(claimable(&store).await.is_empty());
}
