//! Delivery health over HTTP: outcomes, filtered calls and latencies
//! counted per destination, merged into the store, read back through
//! `GET /api/v1/delivery-health`, `/metrics` and the dashboard's page.

use reqwest::Method;
use serde_json::{Value, json};
use sluice_testkit::{Receiver, Reply};

use crate::support::{TestServer, eventually, test_config};

/// One destination's figures for `window` in an overview.
fn figures<'a>(overview: &'a Value, dst: &str, window: &str) -> &'a Value {
    let d = overview["destinations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["id"] == dst)
        .unwrap();
    d["windows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["window"] == window)
        .unwrap()
}

struct World {
    s: TestServer,
    key: String,
    ok: String,
    refused: String,
    _rx: (Receiver, Receiver),
}

/// A source feeding a destination that answers 200 (with a filter that
/// drops `Ignored`) and one that answers 400 (so its deliveries die).
async fn world(s: TestServer) -> World {
    let (src, key) = s.source("web").await;
    let good = Receiver::start().await;
    let bad = Receiver::start().await;
    bad.set_default(Reply::status(400));
    let ok = s.webhook(&src, json!([good.url()]), None).await;
    let refused = s.webhook(&src, json!([bad.url()]), None).await;
    let filters = json!({"filters": [{"name": "no ignored", "action": "drop",
        "when": {"field": "event", "op": "in", "values": ["Ignored"]}}]});
    let (status, body) = s
        .admin(
            Method::PUT,
            &format!("/destinations/{ok}/filters"),
            Some(filters),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    World {
        s,
        key,
        ok,
        refused,
        _rx: (good, bad),
    }
}

async fn send(w: &World, event: &str, n: usize) {
    let batch: Vec<Value> = (0..n)
        .map(|i| json!({"type": "track", "userId": "u1", "event": event, "messageId": format!("{event}-{i}")}))
        .collect();
    let (status, body) =
        w.s.collect(
            "/v1/batch",
            Some(&w.key),
            json!({"batch": batch}).to_string(),
        )
        .await;
    assert_eq!(status, 200, "{body}");
}

async fn overview(s: &TestServer, query: &str) -> (u16, Value) {
    s.admin(Method::GET, &format!("/delivery-health{query}"), None)
        .await
}

fn fast(dir: &std::path::Path, flush_ms: u64) -> sluice_server::Config {
    let mut config = test_config(dir);
    config.delivery.health_flush_ms = flush_ms;
    config
}

#[tokio::test]
async fn the_overview_counts_each_destinations_outcomes_filtered_calls_and_latency() {
    let dir = tempfile::tempdir().unwrap();
    let w = world(TestServer::start_with(fast(dir.path(), 100)).await).await;
    send(&w, "Bought", 3).await;
    send(&w, "Ignored", 1).await;
    let o = eventually(15, || async {
        let (_, o) = overview(&w.s, "").await;
        let ok = figures(&o, &w.ok, "1h");
        let bad = figures(&o, &w.refused, "1h");
        (ok["delivered"] == 3 && ok["filtered"] == 1 && bad["dead"] == 4).then_some(o)
    })
    .await;
    for window in ["1h", "24h", "7d"] {
        let ok = figures(&o, &w.ok, window);
        assert_eq!(ok["success_rate"], 1.0, "{window}: {ok}");
        assert_eq!(ok["attempts"], 3, "one HTTP attempt per delivered call");
        assert!(ok["p50_ms"].as_u64().is_some() && ok["p95_ms"].as_u64().is_some());
        let bad = figures(&o, &w.refused, window);
        assert_eq!(bad["success_rate"], 0.0, "{window}: {bad}");
        assert_eq!(
            (bad["delivered"].as_u64(), bad["filtered"].as_u64()),
            (Some(0), Some(0))
        );
    }
    assert_eq!(o["window"], "24h");
    let ok_dest = o["destinations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["id"] == w.ok)
        .unwrap();
    let chart = ok_dest["chart"].as_array().unwrap();
    assert_eq!(chart.len(), 24, "one bar an hour");
    assert_eq!(
        chart[23]["delivered"], 3,
        "the newest bar holds this hour's deliveries"
    );

    let (status, hour) = overview(&w.s, "?window=1h").await;
    assert_eq!(status, 200);
    assert_eq!(
        hour["destinations"][0]["chart"].as_array().unwrap().len(),
        12
    );
    let (status, body) = overview(&w.s, "?window=2h").await;
    assert_eq!(
        (status, body["code"].as_str()),
        (400, Some("invalid_query"))
    );

    let metrics = w.s.metrics().await;
    let line = format!(
        "sluice_destination_deliveries{{destination=\"{}\",window=\"7d\",outcome=\"dead\"}} 4",
        w.refused
    );
    assert!(metrics.contains(&line), "{line} in\n{metrics}");
    let rate = format!(
        "sluice_destination_success_ratio{{destination=\"{}\",window=\"1h\"}} 1",
        w.ok
    );
    assert!(metrics.contains(&rate), "{rate}");
    assert!(
        metrics.contains("sluice_destination_latency_milliseconds{"),
        "{metrics}"
    );
    assert!(metrics.trim_end().ends_with("# EOF"));

    w.s.stop().await;
}

#[tokio::test]
async fn counts_held_in_memory_are_merged_when_the_server_stops() {
    let dir = tempfile::tempdir().unwrap();
    // A merge interval longer than the test: only the stop writes them.
    let w = world(TestServer::start_with(fast(dir.path(), 60_000)).await).await;
    send(&w, "Bought", 2).await;
    eventually(10, || async {
        let (_, body) =
            w.s.admin(
                Method::GET,
                &format!("/destinations/{}/deliveries?state=succeeded", w.ok),
                None,
            )
            .await;
        (body["data"].as_array()?.len() == 2).then_some(())
    })
    .await;
    let (_, before) = overview(&w.s, "").await;
    assert_eq!(
        figures(&before, &w.ok, "1h")["delivered"],
        0,
        "not merged yet"
    );
    let (ok, _rx) = (w.ok.clone(), w._rx);
    w.s.stop().await;
    let s = TestServer::start_with(fast(dir.path(), 60_000)).await;
    let (_, after) = overview(&s, "").await;
    assert_eq!(figures(&after, &ok, "1h")["delivered"], 2, "{after}");
    s.stop().await;
}

#[tokio::test]
async fn with_delivery_health_off_nothing_is_counted_or_exported() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = fast(dir.path(), 100);
    config.delivery.health = false;
    let w = world(TestServer::start_with(config).await).await;
    send(&w, "Bought", 1).await;
    tokio::time::sleep(std::time::Duration::from_millis(1_000)).await;
    let (status, o) = overview(&w.s, "").await;
    assert_eq!(status, 200);
    assert_eq!(figures(&o, &w.ok, "1h")["delivered"], 0);
    assert!(
        !w.s.metrics()
            .await
            .contains("sluice_destination_deliveries")
    );
    w.s.stop().await;
}
