//! Retry state lives in the store: a new engine continues where the old one stopped.

use std::time::Duration;

use sluice_store::DeliveryState;
use sluice_testkit::{Receiver, Reply};

use crate::support::*;

#[tokio::test]
async fn retries_continue_after_a_restart_on_the_same_store_file() {
    let (dir, store) = new_store().await;
    let rx = Receiver::start().await;
    rx.push(Reply::status(500));
    rx.push(Reply::status(502));
    let dest = destination(&store, "d1", vec![url(&rx.url())], None, true).await;
    let config = sluice_delivery::DeliveryConfig {
        backoff_base: Duration::from_millis(400),
        backoff_cap: Duration::from_millis(400),
        ..fast_config()
    };
    let first = Running::start(store.clone(), config.clone());
    append(&store, &[track("m-1")], &[&dest]).await;
    first.handle.notify();
    rx.wait_for(1, WAIT).await;
    first.stop().await;
    let pending = wait_state(&store, "m-1", DeliveryState::Pending).await;
    assert_eq!(
        pending.attempts, 1,
        "the first attempt was recorded before stopping"
    );
    store.close().await;
    drop(store);

    let reopened = open_store(&dir.path().join("sluice.db")).await;
    let second = Running::start(reopened.clone(), config);
    let done = wait_state(&reopened, "m-1", DeliveryState::Succeeded).await;
    assert_eq!(done.attempts, 3);
    let numbers: Vec<_> = rx
        .requests()
        .iter()
        .filter_map(|r| r.header("x-sluice-attempt").map(str::to_owned))
        .collect();
    assert_eq!(numbers, ["1", "2", "3"]);
    second.stop().await;
}
