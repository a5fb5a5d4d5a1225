//! Scenario 5, personas: batch ingest on a server without computed traits
//! and on one with 10 computed traits connected to a sink, then how long the
//! profile engine takes to compute everything ingested (a marker event sent
//! last is computed only after every event before it, in commit order), and
//! the marker's 200 → its identify at the sink.
//! Events: the ingest scenario's e-commerce track events over 50,000 users.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::load::{Call, Pace, Workload, drive};
use crate::report::{Budget, Report};
use crate::scenarios::{CONNECTIONS, Harness, Plan, SECRET, mb};
use crate::sink::Mode;

const MARKER_USER: &str = "bench-marker";

/// Nine traits over the workload's events, and the marker counter.
fn definitions() -> Vec<Value> {
    let e = "Order Completed";
    vec![
        json!({"kind": "counter", "event": e}),
        json!({"kind": "sum", "event": e, "property": "revenue"}),
        json!({"kind": "avg", "event": e, "property": "revenue"}),
        json!({"kind": "max", "event": e, "property": "revenue", "window": {"days": 30}}),
        json!({"kind": "most_frequent", "event": e, "property": "currency"}),
        json!({"kind": "first", "event": e, "property": "orderId"}),
        json!({"kind": "last", "event": e, "property": "coupon"}),
        json!({"kind": "unique_list", "event": e, "property": "currency"}),
        json!({"kind": "counter", "event": e, "where": [{"property": "revenue", "op": "gt", "value": 100}]}),
        json!({"kind": "counter", "event": "Bench Marker"}),
    ]
}

pub async fn run(plan: &Plan, report: &mut Report) -> anyhow::Result<u64> {
    let events = plan.personas_events;
    let none = Harness::start(plan, &plan.server).await?;
    let workload = Arc::new(Workload::new(Call::Batch(100), "pn", events));
    let out = drive(
        &none.target(CONNECTIONS, Pace::Closed, plan.load_limit),
        workload.clone(),
    )
    .await?;
    let rate_none = out.acked_events(&workload) as f64 / out.elapsed.as_secs_f64();
    let peak_none = none.finish()?;

    let h = Harness::start(plan, &plan.server).await?;
    let quiet = h.sluice.create_source("personas-out").await?;
    let endpoint = h.sink.endpoint(Mode::Ok);
    let dest = h
        .sluice
        .create_webhook(
            &quiet.id,
            "personas",
            std::slice::from_ref(&endpoint.url),
            SECRET,
        )
        .await?;
    // Only the marker trait is connected: the nine others are computed and
    // stored, but sending ~4 changes per event is delivery's load, measured
    // by the end-to-end scenario.
    for (i, def) in definitions().into_iter().enumerate() {
        let connected: Vec<&str> = if i == 9 { vec![dest.as_str()] } else { vec![] };
        let body = json!({"name": format!("bench trait {i}"), "destination_ids": connected, "definition": def});
        h.sluice
            .admin(reqwest::Method::POST, "/computed-traits", body)
            .await?;
    }
    let workload = Arc::new(Workload::new(Call::Batch(100), "pt", events));
    let started = Instant::now();
    let out = drive(
        &h.target(CONNECTIONS, Pace::Closed, plan.load_limit),
        workload.clone(),
    )
    .await?;
    let accepted = out.acked_events(&workload);
    let rate_traits = accepted as f64 / out.elapsed.as_secs_f64();
    let marker = json!({"userId": MARKER_USER, "event": "Bench Marker"}).to_string();
    h.sluice
        .http
        .post(format!("http://{}/v1/track", h.sluice.addr))
        .header("authorization", &h.source.authorization)
        .body(marker)
        .send()
        .await?
        .error_for_status()?;
    let caught_up = wait_marker(&h, plan.delivery_limit * 3).await;

    report.figure(
        "personas",
        "ingest ev/s, no computed traits (batch 100)",
        rate_none,
        "ev/s",
        None,
    );
    report.figure(
        "personas",
        "ingest ev/s, 10 computed traits (batch 100)",
        rate_traits,
        "ev/s",
        None,
    );
    report.figure(
        "personas",
        "ingest with 10 traits / without (same run)",
        rate_traits / rate_none.max(1.0),
        "x",
        Some(Budget::AtLeast(0.85)),
    );
    report.check(
        "personas: the engine computes every ingested event",
        caught_up.is_some(),
        match caught_up {
            Some(done) => format!(
                "{accepted} events computed {:.1} s after the first was sent",
                done.duration_since(started).as_secs_f64()
            ),
            None => format!("{accepted} events; the marker was not computed in time"),
        },
    );
    if let Some(done) = caught_up {
        report.figure(
            "personas",
            "engine ev/s, first event to everything computed",
            accepted as f64 / done.duration_since(started).as_secs_f64(),
            "ev/s",
            None,
        );
    }
    report.figure(
        "personas",
        "disk per person with profiles (50,000 people)",
        h.sluice.disk_bytes() as f64 / 50_000.0,
        "bytes",
        None,
    );
    let peak = h.finish()?;
    report.figure(
        "personas",
        "peak RSS with 10 traits",
        mb(peak),
        "MB",
        Some(Budget::AtMost(150.0)),
    );
    Ok(peak.max(peak_none))
}

/// When the marker's profile shows its counter, or `None` after `limit`.
async fn wait_marker(h: &Harness, limit: Duration) -> Option<Instant> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        let url = format!("/profiles/{MARKER_USER}");
        if let Ok(p) = h
            .sluice
            .admin(reqwest::Method::GET, &url, Value::Null)
            .await
            && p["computed_traits"]["bench_trait_9"] == json!(1)
        {
            return Some(Instant::now());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}
