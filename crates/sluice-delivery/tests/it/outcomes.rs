//! Outcomes across URLs, non-retryable answers, and destinations that
//! must receive nothing.

use std::time::Duration;

use sluice_store::DeliveryState;
use sluice_testkit::{Receiver, Reply};

use crate::support::*;

#[tokio::test]
async fn one_success_among_three_urls_stops_all_retries() {
    let (_dir, store) = new_store().await;
    let (ok, bad, worse) = (
        Receiver::start().await,
        Receiver::start().await,
        Receiver::start().await,
    );
    bad.set_default(Reply::status(500));
    worse.set_default(Reply::status(503));
    let urls = vec![url(&bad.url()), url(&ok.url()), url(&worse.url())];
    let dest = destination(&store, "d1", urls, None, true).await;
    let engine = Running::start(store.clone(), fast_config());
    append(&store, &[track("m-1")], &[&dest]).await;
    engine.handle.notify();
    let done = wait_state(&store, "m-1", DeliveryState::Succeeded).await;
    assert_eq!(done.attempts, 1);
    let log = attempts(&store, done.id).await;
    assert_eq!(log.len(), 3);
    assert!(log.iter().all(|a| a.attempt == 1));
    // Several backoff periods later, nobody got a second request.
    tokio::time::sleep(Duration::from_millis(300)).await;
    for rx in [&ok, &bad, &worse] {
        assert_eq!(rx.requests().len(), 1, "{}", rx.url());
    }
    engine.stop().await;
}

#[tokio::test]
async fn client_error_is_dead_after_one_attempt() {
    let (_dir, store) = new_store().await;
    let rx = Receiver::start().await;
    rx.set_default(Reply::status(400).body(r#"{"error":"bad"}"#));
    let dest = destination(&store, "d1", vec![url(&rx.url())], None, true).await;
    let engine = Running::start(store.clone(), fast_config());
    append(&store, &[track("m-1")], &[&dest]).await;
    engine.handle.notify();
    let dead = wait_state(&store, "m-1", DeliveryState::Dead).await;
    assert_eq!(dead.attempts, 1);
    assert!(
        dead.last_error
            .as_deref()
            .is_some_and(|e| e.contains("400")),
        "{dead:?}"
    );
    let log = attempts(&store, dead.id).await;
    assert_eq!(log[0].response.as_deref(), Some(r#"{"error":"bad"}"#));
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(rx.requests().len(), 1);
    engine.stop().await;
}

#[tokio::test]
async fn redirect_is_not_followed_and_not_retried() {
    let (_dir, store) = new_store().await;
    let (rx, target) = (Receiver::start().await, Receiver::start().await);
    rx.set_default(Reply::status(307).header("Location", &target.url()));
    let dest = destination(&store, "d1", vec![url(&rx.url())], None, true).await;
    let engine = Running::start(store.clone(), fast_config());
    append(&store, &[track("m-1")], &[&dest]).await;
    engine.handle.notify();
    let dead = wait_state(&store, "m-1", DeliveryState::Dead).await;
    assert_eq!(dead.attempts, 1);
    assert!(target.requests().is_empty());
    engine.stop().await;
}

#[tokio::test]
async fn disabled_destination_receives_nothing() {
    let (_dir, store) = new_store().await;
    let rx = Receiver::start().await;
    let dest = destination(&store, "d1", vec![url(&rx.url())], None, false).await;
    let engine = Running::start(store.clone(), fast_config());
    append(&store, &[track("m-1")], &[&dest]).await;
    engine.handle.notify();
    let discarded = wait_state(&store, "m-1", DeliveryState::Discarded).await;
    assert!(
        discarded
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("disabled")),
        "{discarded:?}"
    );
    assert!(rx.requests().is_empty());
    engine.stop().await;
}

#[tokio::test]
async fn notify_starts_the_first_attempt_without_waiting_for_the_poll() {
    let (_dir, store) = new_store().await;
    let rx = Receiver::start().await;
    let dest = destination(&store, "d1", vec![url(&rx.url())], None, true).await;
    let config = sluice_delivery::DeliveryConfig {
        poll_interval: Duration::from_secs(600),
        ..fast_config()
    };
    let engine = Running::start(store.clone(), config);
    // Let the engine's first (empty) claim happen and go to sleep.
    tokio::time::sleep(Duration::from_millis(100)).await;
    append(&store, &[track("m-1")], &[&dest]).await;
    engine.handle.notify();
    rx.wait_for(1, WAIT).await;
    engine.stop().await;
}

#[tokio::test]
async fn unreachable_endpoint_is_retried_as_a_connection_error() {
    let (_dir, store) = new_store().await;
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        format!("http://{addr}/hook")
    };
    let dest = destination(&store, "d1", vec![url(&closed)], None, true).await;
    let config = sluice_delivery::DeliveryConfig {
        retry_window: Duration::from_millis(300),
        ..fast_config()
    };
    let engine = Running::start(store.clone(), config);
    append(&store, &[track("m-1")], &[&dest]).await;
    engine.handle.notify();
    let dead = wait_state(&store, "m-1", DeliveryState::Dead).await;
    assert!(
        dead.attempts >= 2,
        "connection errors are retried: {dead:?}"
    );
    let log = attempts(&store, dead.id).await;
    assert!(
        log.iter().all(|a| a.status.is_none()
            && a.error
                .as_deref()
                .is_some_and(|e| e.starts_with("connection error"))),
        "{log:?}"
    );
    engine.stop().await;
}

#[tokio::test]
async fn response_body_is_kept_only_up_to_the_cap() {
    let (_dir, store) = new_store().await;
    let rx = Receiver::start().await;
    rx.set_default(Reply::status(200).body(&"x".repeat(64 * 1024)));
    let dest = destination(&store, "d1", vec![url(&rx.url())], None, true).await;
    let engine = Running::start(store.clone(), fast_config());
    append(&store, &[track("m-1")], &[&dest]).await;
    engine.handle.notify();
    let done = wait_state(&store, "m-1", DeliveryState::Succeeded).await;
    let log = attempts(&store, done.id).await;
    assert_eq!(log[0].response.as_deref().map(str::len), Some(4096));
    engine.stop().await;
}
