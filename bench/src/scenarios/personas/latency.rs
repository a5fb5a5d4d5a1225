//! Event 200 → identify at the sink, at a steady offered rate: each event is
//! a new person's first order, so it changes a connected counter trait (to
//! 1) and makes the person a member of a connected audience (`true`).

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use reqwest::Method;
use serde_json::json;

use crate::load::{Call, Pace, Workload, drive};
use crate::report::{Budget, Report};
use crate::scenarios::{CONNECTIONS, Harness, Plan, SECRET, ms, once_detail};

pub async fn run(plan: &Plan, report: &mut Report) -> anyhow::Result<u64> {
    let h = Harness::start(plan, &plan.server).await?;
    let endpoint = connect(&h).await?;
    measure(&h, &endpoint, plan, "pl", "", report).await?;
    h.finish()
}

/// A destination for personas on a quiet source, and the two connected
/// definitions whose changes [`measure`] times.
pub async fn connect(h: &Harness) -> anyhow::Result<crate::sink::Endpoint> {
    let endpoint = h.sink.person_endpoint();
    let quiet = h.sluice.create_source("personas-out").await?;
    let dest = h
        .sluice
        .create_webhook(
            &quiet.id,
            "personas",
            std::slice::from_ref(&endpoint.url),
            SECRET,
        )
        .await?;
    let e = "Order Completed";
    h.sluice
        .admin(
            Method::POST,
            "/computed-traits",
            json!({"name": "lat count", "destination_ids": [dest],
                   "definition": {"kind": "counter", "event": e}}),
        )
        .await?;
    h.sluice
        .admin(
            Method::POST,
            "/audiences",
            json!({"name": "lat buyers", "destination_ids": [dest],
                   "definition": {"condition": {"performed": {"event": e, "window": {"days": 1}}}}}),
        )
        .await?;
    Ok(endpoint)
}

/// Sends new people's first orders at the plan's rate (people `{prefix}…`)
/// and reports event 200 → identify at the sink; `label` names the setup.
pub async fn measure(
    h: &Harness,
    endpoint: &crate::sink::Endpoint,
    plan: &Plan,
    prefix: &str,
    label: &str,
    report: &mut Report,
) -> anyhow::Result<()> {
    let events = (plan.latency_rate * plan.latency_secs) as usize;
    let workload = Arc::new(Workload::people(Call::Track, prefix, events, events));
    let pace = Pace::PerSecond(plan.latency_rate);
    let limit = Duration::from_secs_f64(plan.latency_secs) + plan.load_limit;
    let out = drive(&h.target(CONNECTIONS, pace, limit), workload.clone()).await?;
    let mut order = out.acked.clone();
    order.sort_unstable_by_key(|(i, _)| *i);
    let rate = plan.latency_rate;
    for (what, value) in [
        ("trait", "{\"lat_count\":1}"),
        ("audience", "{\"lat_buyers\":true}"),
    ] {
        // Track calls carry one event each: request i is person i.
        let keys: Vec<String> = order
            .iter()
            .map(|(i, _)| format!("user-{i:06}|{value}"))
            .collect();
        let done = h.sink.wait_ids(endpoint, &keys, plan.delivery_limit).await;
        let receipts = h.sink.first_ok(endpoint, &keys);
        let mut hist = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 600_000_000, 3)
            .context("latency histogram")?;
        for ((_, acked), receipt) in order.iter().zip(&receipts) {
            if let Some(received) = receipt {
                let micros = received.saturating_duration_since(*acked).as_micros();
                hist.saturating_record(u64::try_from(micros).unwrap_or(u64::MAX).max(1));
            }
        }
        let audit = h.sink.audit(endpoint, &keys);
        report.check(
            format!("personas{label} at {rate} ev/s: every {what} change delivered once, signed"),
            done.is_some() && out.failures == 0 && !keys.is_empty() && audit.all_once(),
            format!(
                "{} failed ingest requests; {}",
                out.failures,
                once_detail(&audit)
            ),
        );
        for (name, q, budget) in [
            ("p50", 0.5, None),
            ("p99", 0.99, Some(Budget::AtMost(1000.0))),
        ] {
            report.figure(
                "personas",
                format!("event 200 -> {what} identify at sink, {rate} ev/s{label}: {name}"),
                ms(hist.value_at_quantile(q)),
                "ms",
                budget,
            );
        }
    }
    Ok(())
}
