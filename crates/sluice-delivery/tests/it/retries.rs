//! Retryable failures are retried with backoff until success or the window ends.

use sluice_store::DeliveryStore;
use std::time::Duration;

use chrono::Utc;
use sluice_store::{DeliveryFilter, DeliveryState};
use sluice_testkit::{Receiver, Reply};

use crate::support::*;

#[tokio::test]
async fn retries_5xx_until_the_endpoint_recovers() {
    let (_dir, store) = new_store().await;
    let rx = Receiver::start().await;
    rx.push(Reply::status(503));
    rx.push(Reply::status(500).body("boom"));
    let dest = destination(&store, "d1", vec![url(&rx.url())], None, true).await;
    let engine = Running::start(store.clone(), fast_config());
    append(&store, &[track("m-1")], &[&dest]).await;
    engine.handle.notify();
    let done = wait_state(&store, "m-1", DeliveryState::Succeeded).await;
    assert_eq!(done.attempts, 3);
    let got = rx.requests();
    let numbers: Vec<_> = got
        .iter()
        .filter_map(|r| r.header("x-sluice-attempt"))
        .collect();
    assert_eq!(numbers, ["1", "2", "3"]);
    assert!(
        got.windows(2).all(|w| w[0].body == w[1].body),
        "same body each attempt"
    );
    let log = attempts(&store, done.id).await;
    let statuses: Vec<_> = log.iter().map(|a| a.status).collect();
    assert_eq!(statuses, [Some(503), Some(500), Some(200)]);
    assert_eq!(log[1].response.as_deref(), Some("boom"));
    engine.stop().await;
}

#[tokio::test]
async fn retries_on_500_until_window_ends_then_replay_succeeds() {
    let (_dir, store) = new_store().await;
    let rx = Receiver::start().await;
    rx.set_default(Reply::status(500));
    let dest = destination(&store, "d1", vec![url(&rx.url())], None, true).await;
    let config = sluice_delivery::DeliveryConfig {
        retry_window: Duration::from_millis(600),
        ..fast_config()
    };
    let engine = Running::start(store.clone(), config);
    append(&store, &[track("m-1")], &[&dest]).await;
    engine.handle.notify();
    let dead = wait_state(&store, "m-1", DeliveryState::Dead).await;
    assert!(dead.attempts >= 3, "retried before giving up: {dead:?}");
    assert!(
        dead.last_error
            .as_deref()
            .is_some_and(|e| e.contains("window")),
        "{dead:?}"
    );
    let before = rx.requests().len();
    rx.set_default(Reply::status(200));
    let moved = store
        .replay(
            &DeliveryFilter {
                message_id: Some("m-1".into()),
                limit: 10,
                ..DeliveryFilter::default()
            },
            Utc::now(),
        )
        .await
        .expect("replay");
    assert_eq!(moved, 1);
    engine.handle.notify();
    wait_state(&store, "m-1", DeliveryState::Succeeded).await;
    assert_eq!(rx.requests().len(), before + 1);
    engine.stop().await;
}

#[tokio::test]
async fn slow_endpoint_times_out_and_is_retried() {
    let (_dir, store) = new_store().await;
    let rx = Receiver::start().await;
    rx.push(Reply::status(200).delay(Duration::from_secs(3)));
    let dest = destination(&store, "d1", vec![url(&rx.url())], None, true).await;
    let engine = Running::start(store.clone(), fast_config());
    append(&store, &[track("m-1")], &[&dest]).await;
    engine.handle.notify();
    let done = wait_state(&store, "m-1", DeliveryState::Succeeded).await;
    let log = attempts(&store, done.id).await;
    assert_eq!(log.len(), 2, "{log:?}");
    assert_eq!(log[0].status, None);
    assert!(
        log[0]
            .error
            .as_deref()
            .is_some_and(|e| e.contains("timeout")),
        "{log:?}"
    );
    assert_eq!(log[1].status, Some(200));
    engine.stop().await;
}

#[tokio::test]
async fn retry_after_on_429_delays_the_next_attempt() {
    let (_dir, store) = new_store().await;
    let rx = Receiver::start().await;
    rx.push(Reply::status(429).header("Retry-After", "1"));
    let dest = destination(&store, "d1", vec![url(&rx.url())], None, true).await;
    let engine = Running::start(store.clone(), fast_config());
    append(&store, &[track("m-1")], &[&dest]).await;
    engine.handle.notify();
    wait_state(&store, "m-1", DeliveryState::Succeeded).await;
    let got = rx.requests();
    assert_eq!(got.len(), 2);
    // The backoff alone would retry after 30 ms; the server asked for 1 s.
    let gap = got[1].arrived.duration_since(got[0].arrived);
    assert!(gap >= Duration::from_millis(950), "retried after {gap:?}");
    engine.stop().await;
}
