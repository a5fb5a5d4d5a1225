//! Bounds on pending work: the per-destination cap, and the times the
//! engine measures retry windows from.

use std::time::Duration;

use super::support::{Shared, append, at, deliveries_to, event};
use sluice_store::DeliveryState;

const LEASE: Duration = Duration::from_secs(60);

pub async fn claimed_delivery_carries_its_event_received_time(store: Shared) {
    append(&store, "src_a", at(-30), vec![event("m1", &["dst_1"])]).await;
    let due = store.claim_due(at(0), 10, LEASE).await.expect("claim");
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].received_at, at(-30));
}

pub async fn cap_pending_dead_letters_the_oldest_beyond_the_cap(store: Shared) {
    for i in 0..5 {
        append(
            &store,
            "src_a",
            at(i),
            vec![event(&format!("a{i}"), &["dst_1"])],
        )
        .await;
    }
    append(&store, "src_a", at(0), vec![event("b0", &["dst_2"])]).await;
    append(&store, "src_a", at(1), vec![event("b1", &["dst_2"])]).await;
    // The oldest of dst_1 is being sent (leased): it is left to its sender.
    let leased = store.claim_due(at(0), 1, LEASE).await.expect("claim");
    assert_eq!(leased.len(), 1);
    assert_eq!(leased[0].message_id, "a0");

    let capped = store.cap_pending(2, at(10)).await.expect("cap");
    assert_eq!(
        capped,
        vec![("dst_1".to_owned(), 3)],
        "5 pending over a cap of 2, one of them leased; dst_2 is under it"
    );
    let mut rows = deliveries_to(&store, "dst_1").await;
    rows.sort_by_key(|d| d.id);
    let states: Vec<(&str, DeliveryState)> = rows
        .iter()
        .map(|d| (d.message_id.as_str(), d.state))
        .collect();
    assert_eq!(
        states,
        vec![
            ("a0", DeliveryState::Pending),
            ("a1", DeliveryState::Dead),
            ("a2", DeliveryState::Dead),
            ("a3", DeliveryState::Dead),
            ("a4", DeliveryState::Pending),
        ]
    );
    let reason = rows[1].last_error.clone().unwrap_or_default();
    assert!(reason.contains("cap of 2"), "{reason}");
    assert!(
        deliveries_to(&store, "dst_2")
            .await
            .iter()
            .all(|d| d.state == DeliveryState::Pending),
        "a destination under the cap keeps everything"
    );
    assert!(store.cap_pending(2, at(11)).await.expect("cap").is_empty());
    let mut all = store.cap_pending(0, at(11)).await.expect("cap");
    all.sort();
    assert_eq!(all, vec![("dst_1".to_owned(), 1), ("dst_2".to_owned(), 2)]);
}
