//! A hanging endpoint never holds up another destination's deliveries.

use std::time::Duration;

use sluice_delivery::DeliveryConfig;
use sluice_store::DeliveryState;
use sluice_testkit::Receiver;

use crate::support::*;

#[tokio::test]
async fn fast_destination_completes_while_another_hangs() {
    let (_dir, store) = new_store().await;
    let (stuck, fast) = (Receiver::start().await, Receiver::start().await);
    stuck.hang();
    let slow_dest = destination(&store, "slow", vec![url(&stuck.url())], None, true).await;
    let fast_dest = destination(&store, "fast", vec![url(&fast.url())], None, true).await;
    let config = DeliveryConfig {
        // Long enough that the hanging sends are still open at the end.
        timeout: Duration::from_secs(60),
        lease: Duration::from_secs(600),
        concurrency_per_destination: 2,
        max_queued_per_destination: 2,
        max_in_flight: 8,
        claim_batch: 8,
        shutdown_grace: Duration::from_millis(200),
        ..fast_config()
    };
    let engine = Running::start(store.clone(), config);
    // The stuck destination's backlog comes first in due order.
    let stuck_events: Vec<_> = (0..12).map(|i| track(&format!("s-{i}"))).collect();
    append(&store, &stuck_events, &[&slow_dest]).await;
    let fast_events: Vec<_> = (0..12).map(|i| track(&format!("f-{i}"))).collect();
    append(&store, &fast_events, &[&fast_dest]).await;
    engine.handle.notify();

    fast.wait_for(12, WAIT).await;
    for i in 0..12 {
        wait_state(&store, &format!("f-{i}"), DeliveryState::Succeeded).await;
    }
    // Meanwhile the stuck endpoint holds exactly its concurrency, unanswered.
    assert_eq!(stuck.requests().len(), 2);
    for i in 0..12 {
        let d = deliveries(&store, &format!("s-{i}")).await;
        assert_eq!(d[0].state, DeliveryState::Pending);
        assert_eq!(d[0].attempts, 0);
    }
    engine.stop().await;
}

/// Two hanging destinations together can hold every delivery this engine
/// may hold; their queues leave one lane's concurrency free, so a third
/// destination still sends at once instead of after their timeouts.
#[tokio::test]
async fn fast_destination_completes_while_two_others_hang() {
    let (_dir, store) = new_store().await;
    let (one, two, fast) = (
        Receiver::start().await,
        Receiver::start().await,
        Receiver::start().await,
    );
    one.hang();
    two.hang();
    let first = destination(&store, "one", vec![url(&one.url())], None, true).await;
    let second = destination(&store, "two", vec![url(&two.url())], None, true).await;
    let fast_dest = destination(&store, "fast", vec![url(&fast.url())], None, true).await;
    let config = DeliveryConfig {
        timeout: Duration::from_secs(60),
        lease: Duration::from_secs(600),
        concurrency_per_destination: 2,
        max_queued_per_destination: 2,
        // Exactly what the two hanging destinations' lanes can hold.
        max_in_flight: 8,
        claim_batch: 8,
        shutdown_grace: Duration::from_millis(200),
        ..fast_config()
    };
    let engine = Running::start(store.clone(), config);
    for (prefix, dest) in [("a", &first), ("b", &second)] {
        let events: Vec<_> = (0..12).map(|i| track(&format!("{prefix}-{i}"))).collect();
        append(&store, &events, &[dest]).await;
    }
    let fast_events: Vec<_> = (0..12).map(|i| track(&format!("f-{i}"))).collect();
    append(&store, &fast_events, &[&fast_dest]).await;
    engine.handle.notify();

    fast.wait_for(12, WAIT).await;
    for i in 0..12 {
        wait_state(&store, &format!("f-{i}"), DeliveryState::Succeeded).await;
    }
    assert_eq!(
        one.requests().len() + two.requests().len(),
        4,
        "each at its concurrency"
    );
    engine.stop().await;
}

/// A destination at its concurrency limit hands extra deliveries back
/// instead of sitting on their leases, so a backlog drains at the
/// endpoint's pace and no attempt is counted for the wait.
#[tokio::test]
async fn saturated_destination_drains_its_backlog_without_waiting_for_leases() {
    let (_dir, store) = new_store().await;
    let slow = Receiver::start().await;
    slow.set_default(sluice_testkit::Reply::status(200).delay(Duration::from_millis(50)));
    let dest = destination(&store, "slow", vec![url(&slow.url())], None, true).await;
    let config = DeliveryConfig {
        timeout: Duration::from_secs(5),
        // A lease far longer than the test: only hand-backs can make it pass.
        lease: Duration::from_secs(600),
        concurrency_per_destination: 1,
        max_queued_per_destination: 0,
        claim_batch: 16,
        ..fast_config()
    };
    let engine = Running::start(store.clone(), config);
    let events: Vec<_> = (0..10).map(|i| track(&format!("b-{i}"))).collect();
    append(&store, &events, &[&dest]).await;
    engine.handle.notify();

    slow.wait_for(10, WAIT).await;
    for i in 0..10 {
        let d = wait_state(&store, &format!("b-{i}"), DeliveryState::Succeeded).await;
        assert_eq!(d.attempts, 1, "waiting for a slot is not an attempt");
    }
    assert_eq!(slow.requests().len(), 10, "each delivered exactly once");
    engine.stop().await;
}

/// A destination that fails everything stops taking a full lane: after a run
/// of failures only one request is in flight at a time (each probe starts
/// after the previous answered), and the rest wait without counting attempts.
#[tokio::test]
async fn failing_destination_is_probed_one_request_at_a_time() {
    let (_dir, store) = new_store().await;
    let broken = Receiver::start().await;
    let answer = Duration::from_millis(100);
    broken.set_default(sluice_testkit::Reply::status(503).delay(answer));
    let dest = destination(&store, "broken", vec![url(&broken.url())], None, true).await;
    let config = DeliveryConfig {
        concurrency_per_destination: 8,
        max_queued_per_destination: 8,
        backoff_base: Duration::from_millis(20),
        backoff_cap: Duration::from_millis(100),
        retry_window: Duration::from_secs(600),
        ..fast_config()
    };
    let engine = Running::start(store.clone(), config);
    let events: Vec<_> = (0..40).map(|i| track(&format!("x-{i}"))).collect();
    append(&store, &events, &[&dest]).await;
    engine.handle.notify();

    let got = broken.wait_for(40, WAIT).await;
    let tail: Vec<_> = got.iter().skip(got.len() - 10).map(|r| r.arrived).collect();
    for pair in tail.windows(2) {
        let gap = pair[1].duration_since(pair[0]);
        assert!(
            gap >= answer - Duration::from_millis(10),
            "two requests in flight at once (gap {gap:?})"
        );
    }
    let mut never_tried = 0;
    for i in 0..40 {
        if deliveries(&store, &format!("x-{i}")).await[0].attempts == 0 {
            never_tried += 1;
        }
    }
    assert!(
        never_tried > 0,
        "while the breaker is open, waiting deliveries are not attempted"
    );
    engine.stop().await;
}

/// An endpoint that goes down fails every send in flight at once. That opens
/// the breaker, but it is one failure seen many times, not a long run: once
/// the endpoint answers again, the backlog follows the first successful
/// probe instead of waiting out `backoff_cap`.
#[tokio::test]
async fn backlog_follows_the_first_successful_probe_after_a_short_outage() {
    let (_dir, store) = new_store().await;
    let flaky = Receiver::start().await;
    let concurrency = 32;
    for _ in 0..concurrency {
        flaky.push(sluice_testkit::Reply::status(503));
    }
    let dest = destination(&store, "flaky", vec![url(&flaky.url())], None, true).await;
    let config = DeliveryConfig {
        concurrency_per_destination: concurrency,
        max_queued_per_destination: 7 * concurrency,
        backoff_base: Duration::from_millis(30),
        // Longer than the test: a backlog held until the cap fails it.
        backoff_cap: Duration::from_secs(60),
        retry_window: Duration::from_secs(600),
        lease: Duration::from_secs(60),
        ..fast_config()
    };
    let engine = Running::start(store.clone(), config);
    let events: Vec<_> = (0..100).map(|i| track(&format!("o-{i}"))).collect();
    append(&store, &events, &[&dest]).await;
    engine.handle.notify();

    for i in 0..100 {
        wait_state(&store, &format!("o-{i}"), DeliveryState::Succeeded).await;
    }
    let oks = flaky
        .requests()
        .iter()
        .filter(|r| r.text().contains("\"o-"))
        .count();
    assert!(
        oks >= 100,
        "every event reached the endpoint ({oks} requests)"
    );
    engine.stop().await;
}
