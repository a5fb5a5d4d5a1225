//! The circuit breaker never stretches a retry window: a failing endpoint's
//! deliveries are all dead by the window's end plus a poll or two, while a
//! healthy neighbour keeps delivering.

use sluice_store::DeliveryStore;
use std::time::{Duration, Instant};

use sluice_delivery::DeliveryConfig;
use sluice_store::{DeliveryFilter, DeliveryState};
use sluice_testkit::{Receiver, Reply};

use crate::support::*;

#[tokio::test]
async fn failing_endpoint_is_all_dead_within_the_window_while_a_neighbour_delivers() {
    let (_dir, store) = new_store().await;
    let (down, healthy) = (Receiver::start().await, Receiver::start().await);
    down.set_default(Reply::status(503));
    let down_dest = destination(&store, "down", vec![url(&down.url())], None, true).await;
    let ok_dest = destination(&store, "ok", vec![url(&healthy.url())], None, true).await;
    let window = Duration::from_secs(2);
    let poll = Duration::from_millis(250);
    let config = DeliveryConfig {
        retry_window: window,
        poll_interval: poll,
        backoff_base: Duration::from_millis(50),
        backoff_cap: Duration::from_millis(400),
        ..fast_config()
    };
    let engine = Running::start(store.clone(), config);
    let appended = Instant::now();
    let failing: Vec<_> = (0..60).map(|i| track(&format!("d-{i}"))).collect();
    append(&store, &failing, &[&down_dest]).await;
    engine.handle.notify();

    // The neighbour gets a steady trickle throughout the window.
    let mut sent = 0;
    while appended.elapsed() < window {
        append(&store, &[track(&format!("ok-{sent}"))], &[&ok_dest]).await;
        engine.handle.notify();
        sent += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let deadline = appended + window + 2 * poll;
    let dead_by_deadline = loop {
        let dead = store
            .list_deliveries(&DeliveryFilter {
                destination_id: Some(down_dest.clone()),
                state: Some(DeliveryState::Dead),
                limit: 1000,
                ..DeliveryFilter::default()
            })
            .await
            .expect("list");
        if dead.len() == failing.len() || Instant::now() >= deadline {
            break dead;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(
        dead_by_deadline.len(),
        failing.len(),
        "deliveries still pending after the window plus two polls"
    );
    assert!(dead_by_deadline.iter().all(|d| d.last_error.is_some()));
    healthy.wait_for(sent, WAIT).await;
    for i in 0..sent {
        wait_state(&store, &format!("ok-{i}"), DeliveryState::Succeeded).await;
    }
    engine.stop().await;
}
