//! A failing endpoint's backlog: dead on time however the breaker holds it
//! back, and bounded by the per-destination pending cap.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use sluice_testkit::Receiver;

use crate::support::{TestServer, eventually, metric, test_config};

#[tokio::test]
async fn pending_cap_dead_letters_the_oldest_with_a_reason_and_counts_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = test_config(dir.path());
    config.delivery.max_pending_per_destination = 3;
    config.delivery.pending_cap_interval_ms = 100;
    config.delivery.backoff_base_ms = 300;
    config.delivery.backoff_cap_ms = 1_000;
    config.delivery.health_flush_ms = 100;
    let s = TestServer::start_with(config).await;
    let (src, key) = s.source("web").await;
    let rx = Receiver::start().await;
    rx.set_default(sluice_testkit::Reply::status(503));
    let dest = s.webhook(&src, json!([rx.url()]), None).await;
    let batch: Vec<Value> = (0..10)
        .map(|i| json!({"type": "track", "userId": "u", "event": "E", "messageId": format!("cap-{i}")}))
        .collect();
    let body = json!({"batch": batch}).to_string();
    assert_eq!(s.collect("/v1/batch", Some(&key), body).await.0, 200);
    let dead = eventually(15, || async {
        let (_, body) = s
            .admin(
                Method::GET,
                &format!("/destinations/{dest}/deliveries?state=dead"),
                None,
            )
            .await;
        let dead = body["data"].as_array().cloned().unwrap_or_default();
        (dead.len() >= 7).then_some(dead)
    })
    .await;
    assert_eq!(dead.len(), 7, "exactly the ones over the cap");
    for d in &dead {
        let reason = d["last_error"].as_str().unwrap_or_default();
        assert!(reason.contains("cap of 3"), "{reason}");
    }
    let mut dead_ids: Vec<&str> = dead
        .iter()
        .filter_map(|d| d["message_id"].as_str())
        .collect();
    dead_ids.sort();
    assert_eq!(
        dead_ids,
        [
            "cap-0", "cap-1", "cap-2", "cap-3", "cap-4", "cap-5", "cap-6"
        ],
        "oldest first"
    );
    let text = s.metrics().await;
    assert_eq!(
        metric(&text, "sluice_deliveries_dead_lettered_pending_cap_total "),
        7.0
    );
    // Delivery health counts them as the destination's dead deliveries.
    let dead_in_health = eventually(10, || async {
        let (_, o) = s
            .admin(Method::GET, "/delivery-health?window=1h", None)
            .await;
        let ours = o["destinations"]
            .as_array()
            .and_then(|all| all.iter().find(|d| d["id"] == dest.as_str()).cloned())?;
        let dead = ours["windows"]
            .as_array()?
            .iter()
            .find(|w| w["window"] == "1h")?["dead"]
            .as_u64()?;
        (dead >= 7).then_some(dead)
    })
    .await;
    assert_eq!(dead_in_health, 7);
}

#[tokio::test]
async fn failing_endpoint_is_all_dead_within_the_window_while_a_neighbour_delivers() {
    const POLL: Duration = Duration::from_secs(1); // delivery's default poll interval
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = test_config(dir.path());
    config.delivery.retry_window_secs = 2;
    let window = Duration::from_secs(2);
    let s = TestServer::start_with(config).await;
    let (src_down, key_down) = s.source("down").await;
    let (src_ok, key_ok) = s.source("ok").await;
    let (down, healthy) = (Receiver::start().await, Receiver::start().await);
    down.set_default(sluice_testkit::Reply::status(503));
    let dest_down = s.webhook(&src_down, json!([down.url()]), None).await;
    s.webhook(&src_ok, json!([healthy.url()]), None).await;

    let started = std::time::Instant::now();
    let batch: Vec<Value> = (0..100)
        .map(|i| json!({"type": "track", "userId": "u", "event": "E", "messageId": format!("down-{i}")}))
        .collect();
    let body = json!({"batch": batch}).to_string();
    assert_eq!(s.collect("/v1/batch", Some(&key_down), body).await.0, 200);
    let mut sent = 0;
    while started.elapsed() < window {
        let call = json!({"userId": "u", "event": "E", "messageId": format!("ok-{sent}")});
        assert_eq!(
            s.collect("/v1/track", Some(&key_ok), call.to_string())
                .await
                .0,
            200
        );
        sent += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let deadline = started + window + 2 * POLL;
    loop {
        let (_, body) = s
            .admin(
                Method::GET,
                &format!("/destinations/{dest_down}/deliveries?state=pending&limit=500"),
                None,
            )
            .await;
        let pending = body["data"].as_array().map_or(0, Vec::len);
        if pending == 0 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{pending} deliveries still pending after the window plus two polls"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (_, dead) = s
        .admin(
            Method::GET,
            &format!("/destinations/{dest_down}/deliveries?state=dead&limit=500"),
            None,
        )
        .await;
    assert_eq!(dead["data"].as_array().map_or(0, Vec::len), 100);
    healthy.wait_for(sent, Duration::from_secs(10)).await;
}

#[tokio::test]
async fn a_busy_destinations_backlog_is_claimed_as_it_makes_room_not_handed_back_again_and_again() {
    const EVENTS: usize = 2_000;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = test_config(dir.path());
    // Two sends at a time, each 2 ms: the destination holds 2 + 448
    // deliveries (its queue) and the backlog is four times that. (A short
    // timeout keeps the lease longer than the queue's wait, as required.)
    config.delivery.concurrency_per_destination = 2;
    config.delivery.timeout_ms = 200;
    let s = TestServer::start_with(config).await;
    let (src, key) = s.source("web").await;
    let rx = Receiver::start().await;
    rx.set_default(sluice_testkit::Reply::status(200).delay(Duration::from_millis(2)));
    s.webhook(&src, json!([rx.url()]), None).await;
    for chunk in 0..EVENTS / 100 {
        let batch: Vec<Value> = (0..100)
            .map(|i| json!({"type": "track", "userId": "u", "event": "E", "messageId": format!("busy-{chunk}-{i}")}))
            .collect();
        let body = json!({"batch": batch}).to_string();
        assert_eq!(s.collect("/v1/batch", Some(&key), body).await.0, 200);
    }
    eventually(60, || async {
        (rx.requests().len() >= EVENTS).then_some(())
    })
    .await;
    let handed_back = metric(&s.metrics().await, "sluice_delivery_handed_back_total ");
    // The first claim that finds the queue full hands back at most one
    // claim batch (256); after that claims take only what the queue has
    // room for. Claiming blindly handed back 24,726 here.
    assert!(
        handed_back <= 256.0,
        "{handed_back} deliveries handed back for {EVENTS} sent"
    );
    assert_eq!(rx.requests().len(), EVENTS, "each sent once");
}

#[tokio::test]
async fn calls_are_not_handed_over_while_claims_hold_the_sending_permits() {
    // 700 sends at once, and the receiver's end of each, in this process:
    // more than a soft open-file limit of 1,024 allows.
    let _ = sluice_server::rlimit::raise_nofile();
    let dir = tempfile::tempdir().expect("tempdir");
    // One lane may hold every permit (1,024), so only the engine's room is
    // in play; sends that hang for 3 s stay within the timeout.
    let FastAndSlow { s, key, fast, slow } = FastAndSlow::start(dir.path(), 2_000, 5_000).await;
    // The first 512 deliveries (the engine's room) go to it from ingest
    // and end at once; the 700 slow ones are claimed and hold 700 of the
    // 1,024 sending permits for 3 s, while the room is free again.
    let mut first = calls("fast", "fast", 512);
    first.extend(calls("slow", "slow", 700));
    let body = json!({"batch": first}).to_string();
    assert_eq!(s.collect("/v1/batch", Some(&key), body).await.0, 200);
    fast.wait_for(512, Duration::from_secs(10)).await;
    tokio::time::sleep(Duration::from_millis(500)).await;

    // 400 more: more than the 324 free permits. Handed over, the rest
    // would be handed back; claimed, they wait for permits.
    let body = json!({"batch": calls("fast", "more", 400)}).to_string();
    assert_eq!(s.collect("/v1/batch", Some(&key), body).await.0, 200);
    fast.wait_for(912, Duration::from_secs(20)).await;
    slow.wait_for(700, Duration::from_secs(20)).await;
    let handed_back = metric(&s.metrics().await, "sluice_delivery_handed_back_total ");
    assert_eq!(handed_back, 0.0, "deliveries handed back");
    assert_eq!(fast.requests().len(), 912, "each sent once");
}

#[tokio::test]
async fn calls_for_other_destinations_come_from_ingest_while_one_sends_all_it_may() {
    let dir = tempfile::tempdir().expect("tempdir");
    let FastAndSlow { s, key, fast, slow } = FastAndSlow::start(dir.path(), 4, 10_000).await;

    // The slow destination sends all it may (4 at once) for 3 s.
    let body = json!({"batch": calls("slow", "slow", 4)}).to_string();
    assert_eq!(s.collect("/v1/batch", Some(&key), body).await.0, 200);
    slow.wait_for(4, Duration::from_secs(10)).await;
    let from_ingest = || async { metric(&s.metrics().await, "sluice_delivery_from_ingest_total ") };
    let before = from_ingest().await;
    // One at a time, each sent before the next is made: the fast
    // destination never nears its own limit.
    for (i, call) in calls("fast", "fast", 20).into_iter().enumerate() {
        let (status, _) = s.collect("/v1/track", Some(&key), call.to_string()).await;
        assert_eq!(status, 200);
        fast.wait_for(i + 1, Duration::from_secs(10)).await;
    }
    assert!(
        slow.requests().len() == 4,
        "the slow sends were still in flight"
    );
    // Each went to the engine from ingest, none through a claim.
    assert_eq!(from_ingest().await - before, 20.0);
}

/// `n` track calls of `event`, with message ids `prefix-0`, `prefix-1`, ….
fn calls(event: &str, prefix: &str, n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| json!({"type": "track", "userId": "u", "event": event, "messageId": format!("{prefix}-{i}")}))
        .collect()
}

/// A server with two webhooks on one source: `fast` takes the calls of
/// event "fast" and answers at once, `slow` those of "slow", answered after
/// 3 s.
struct FastAndSlow {
    s: TestServer,
    key: String,
    fast: Receiver,
    slow: Receiver,
}

impl FastAndSlow {
    async fn start(dir: &std::path::Path, concurrency: usize, timeout_ms: u64) -> FastAndSlow {
        let mut config = test_config(dir);
        config.delivery.concurrency_per_destination = concurrency;
        config.delivery.timeout_ms = timeout_ms;
        let s = TestServer::start_with(config).await;
        let (src, key) = s.source("web").await;
        let fast = Receiver::start().await;
        let slow = Receiver::start().await;
        slow.set_default(sluice_testkit::Reply::status(200).delay(Duration::from_secs(3)));
        for (rx, event) in [(&fast, "fast"), (&slow, "slow")] {
            let dst = s.webhook(&src, json!([rx.url()]), None).await;
            let only = json!({"filters": [{"name": "one event", "action": "drop",
                "when": {"field": "event", "op": "not_in", "values": [event]}}]});
            let (status, body) = s
                .admin(
                    Method::PUT,
                    &format!("/destinations/{dst}/filters"),
                    Some(only),
                )
                .await;
            assert_eq!(status, 200, "{body}");
        }
        FastAndSlow { s, key, fast, slow }
    }
}
