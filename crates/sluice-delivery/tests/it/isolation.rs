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
