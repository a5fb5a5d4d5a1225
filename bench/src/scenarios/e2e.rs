//! Scenario 2, end to end, on one server with one signed webhook URL.
//!
//! 1. Saturation: with the sink's gate closed (requests are held, and
//!    refused with 503 after a few seconds, below Sluice's answer timeout),
//!    a backlog is ingested (disk per stored event is read here, "before
//!    delivery"); then the gate opens
//!    and the time until the sink has answered every event 2xx gives
//!    webhooks/s. Disk is read again "after delivery" (retention's minimum is
//!    one hour, so nothing has been pruned yet), and once more when the
//!    store has come to rest ("at rest": the profile engine has caught up
//!    and SQLite has truncated its write-ahead log, a fixed 64 MiB under
//!    load that would otherwise count as some 300 bytes per event here).
//! 2. Latency: single `/v1/track` calls at a fixed offered rate; for each
//!    event, the time from the client reading its 200 to the sink receiving
//!    the signed webhook (both clocks are this process's monotonic clock).
//!    A webhook that beats the 200 back to the client counts as 0. The
//!    phase's CPU (and on PostgreSQL its database CPU, WAL and row writes)
//!    per call is the happy path's cost: every call delivered at once, on
//!    its first attempt; at this rate it includes the idle work of the
//!    phase (polls, heartbeats) spread over the calls.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::load::{Call, Pace, Workload, drive};
use crate::report::{Budget, Report};
use crate::scenarios::cost::Meter;
use crate::scenarios::{CONNECTIONS, Harness, Plan, audit_detail, mb, ms, once_detail};
use crate::sink::{Endpoint, Mode};

pub async fn run(plan: &Plan, report: &mut Report) -> anyhow::Result<u64> {
    let h = Harness::start(plan, &plan.server).await?;
    let endpoint = h.sink.endpoint(Mode::Ok);
    h.webhook("sink", &[&endpoint]).await?;
    saturation(plan, report, &h, &endpoint).await?;
    latency(plan, report, &h, &endpoint).await?;
    h.finish()
}

async fn saturation(
    plan: &Plan,
    report: &mut Report,
    h: &Harness,
    endpoint: &Endpoint,
) -> anyhow::Result<()> {
    let backlog = Arc::new(Workload::new(Call::Batch(100), "e2e", plan.drain_events));
    let limit = plan.load_limit.min(Duration::from_secs(20));
    h.sink.set_open(false);
    let meter = Meter::start(h).await?;
    let out = drive(&h.target(CONNECTIONS, Pace::Closed, limit), backlog.clone()).await;
    h.sink.set_open(true);
    let out = out?;
    let events = out.acked_events(&backlog);
    let disk_before = h.sluice.disk_bytes();

    let opened = Instant::now();
    let accepted = out.acked_ids(&backlog);
    let done = h
        .sink
        .wait_ids(endpoint, &accepted, plan.delivery_limit)
        .await;
    let drained = opened.elapsed() + out.elapsed;
    meter
        .finish(h, report, "ingest + delivery", events, drained)
        .await?;
    if let Some(done) = done {
        report.figure(
            "end-to-end",
            "webhooks/s draining a backlog (1 URL, signed)",
            events as f64 / done.duration_since(opened).as_secs_f64(),
            "hooks/s",
            Some(Budget::AtLeast(15_000.0)),
        );
    }
    // Let the attempt reports land, and any duplicate show itself.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let audit = h.sink.audit(endpoint, &accepted);
    report.check(
        "end-to-end backlog: every accepted event delivered once, signed",
        done.is_some() && out.failures == 0 && events > 0 && audit.is_clean(),
        format!(
            "{}{} failed ingest requests; {}",
            drain_late(done.is_some(), plan.delivery_limit),
            out.failures,
            audit_detail(&audit)
        ),
    );
    if h.sluice.kafka() {
        dedup_memory(report, h).await?;
    }
    let per_event = |bytes: u64| bytes as f64 / events.max(1) as f64;
    report.figure(
        "resources",
        "disk per stored event, before delivery",
        per_event(disk_before),
        "bytes",
        None,
    );
    report.figure(
        "resources",
        "disk per stored event, after delivery",
        per_event(h.sluice.disk_bytes()),
        "bytes",
        None,
    );
    let (at_rest, rested) = h.sluice.disk_bytes_at_rest(Duration::from_secs(60)).await;
    report.figure(
        "resources",
        if rested {
            "disk per stored event, after delivery, store at rest"
        } else {
            "disk per stored event, after delivery (store not at rest after 60 s)"
        },
        per_event(at_rest),
        "bytes",
        None,
    );
    report.figure(
        "resources",
        "data dir after delivery",
        mb(h.sluice.disk_bytes()),
        "MB",
        None,
    );
    Ok(())
}

/// The Kafka shape's deduplication memory after the backlog, as the first
/// node shows it on `/metrics`.
async fn dedup_memory(report: &mut Report, h: &Harness) -> anyhow::Result<()> {
    let calls = h.sluice.metric("sluice_kafka_dedup_calls").await?;
    let bytes = h.sluice.metric("sluice_kafka_dedup_memory_bytes").await?;
    if let (Some(calls), Some(bytes)) = (calls, bytes) {
        report.figure(
            "kafka",
            "deduplication: calls remembered",
            calls,
            "calls",
            None,
        );
        report.figure("kafka", "deduplication: memory", bytes / 1e6, "MB", None);
        report.figure(
            "kafka",
            "deduplication: memory per call remembered",
            bytes / calls.max(1.0),
            "bytes",
            None,
        );
    }
    Ok(())
}

async fn latency(
    plan: &Plan,
    report: &mut Report,
    h: &Harness,
    endpoint: &Endpoint,
) -> anyhow::Result<()> {
    let events = (plan.latency_rate * plan.latency_secs) as usize;
    let workload = Arc::new(Workload::new(Call::Track, "lat", events));
    let pace = Pace::PerSecond(plan.latency_rate);
    let limit = Duration::from_secs_f64(plan.latency_secs) + plan.load_limit;
    let meter = Meter::start(h).await?;
    let started = Instant::now();
    let out = drive(&h.target(CONNECTIONS, pace, limit), workload.clone()).await?;
    let mut order = out.acked.clone();
    order.sort_unstable_by_key(|(i, _)| *i);
    let ids: Vec<String> = order
        .iter()
        .filter_map(|(i, _)| workload.ids_of(*i).next())
        .collect();
    let done = h.sink.wait_ids(endpoint, &ids, plan.delivery_limit).await;
    // The happy path's cost: single calls each delivered on its first
    // attempt, the destination keeping up.
    meter
        .finish(
            h,
            report,
            &format!("single calls delivered at {} ev/s", plan.latency_rate),
            ids.len(),
            started.elapsed(),
        )
        .await?;
    let receipts = h.sink.first_ok(endpoint, &ids);
    let mut hist = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 600_000_000, 3)
        .context("latency histogram")?;
    for ((_, acked), receipt) in order.iter().zip(&receipts) {
        if let Some(received) = receipt {
            let micros = received.saturating_duration_since(*acked).as_micros();
            hist.saturating_record(u64::try_from(micros).unwrap_or(u64::MAX).max(1));
        }
    }
    let rate = plan.latency_rate;
    for (name, q, budget) in [
        ("p50", 0.5, None),
        ("p99", 0.99, Some(Budget::AtMost(25.0))),
        ("p99.9", 0.999, None),
    ] {
        report.figure(
            "end-to-end",
            format!("ingest 200 -> sink at {rate} ev/s: {name}"),
            ms(hist.value_at_quantile(q)),
            "ms",
            budget,
        );
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    // Only this phase's ids: stragglers of the backlog are judged above.
    let audit = h.sink.audit(endpoint, &ids);
    report.check(
        format!("end-to-end at {rate} ev/s: every accepted event delivered once, signed"),
        done.is_some() && out.failures == 0 && !ids.is_empty() && audit.all_once(),
        format!(
            "{} failed ingest requests; {}",
            out.failures,
            once_detail(&audit)
        ),
    );
    Ok(())
}

/// Says why a drain that completed only after `limit` fails the check,
/// beside an audit that may by then read "exactly once": the check is also
/// about draining within the limit, which `--wait` sets.
fn drain_late(drained: bool, limit: Duration) -> String {
    if drained {
        String::new()
    } else {
        format!(
            "not every accepted event arrived within {}s (the drain limit; raise it with --wait); ",
            limit.as_secs()
        )
    }
}
