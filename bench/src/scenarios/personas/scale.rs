//! Scenario personas-scale: 10,000 definitions on one node.
//!
//! - Creating them one by one: the time of each create, the last hundred
//!   against the first hundred (budget: at most 1.5x).
//! - Event 200 → identify at the sink at 2,000 events/s with all of them
//!   live (the two connected definitions of [`super::latency`] among them).
//! - Batch ingest with them against a fresh server with none (budget: at
//!   least 0.9x), and the engine's catch-up after it.
//! - Peak RSS of the server with them (budget: 150 MB).
//!
//! The mix ([`super::scale_defs`]): most definitions read one of 1,000
//! other events, one in 1,000 reads the workload's `Order Completed` (as
//! many as read each other name), one in 1,000 holds for everybody.
//! `--quick`: 300 definitions, 5,000 events.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use reqwest::Method;
use serde_json::Value;

use super::{latency, scale_defs, sync};
use crate::load::{Call, Pace, Workload, drive};
use crate::report::{Budget, Report};
use crate::scenarios::{CONNECTIONS, Harness, Plan, mb};

struct Sizes {
    definitions: usize,
    events: usize,
    people: usize,
}

impl Sizes {
    fn new(plan: &Plan) -> Sizes {
        if plan.quick {
            Sizes {
                definitions: 300,
                events: 5_000,
                people: 1_000,
            }
        } else {
            Sizes {
                definitions: 10_000,
                events: 200_000,
                people: 20_000,
            }
        }
    }
}

pub async fn run(plan: &Plan, report: &mut Report) -> anyhow::Result<u64> {
    let sizes = Sizes::new(plan);
    let load = Arc::new(Workload::people(
        Call::Batch(100),
        "ps",
        sizes.events,
        sizes.people,
    ));
    eprintln!("  personas-scale: ingest, no definitions");
    let h = Harness::start(plan, &plan.server).await?;
    let none = ingest(&h, plan, &load).await?;
    h.finish()?;

    let n = sizes.definitions;
    eprintln!("  personas-scale: creating {n} definitions");
    let h = Harness::start(plan, &plan.server).await?;
    let endpoint = latency::connect(&h).await?;
    let times = create(&h, n).await?;
    let window = 100.min(n / 3).max(1);
    let first = median(&times[..window]);
    let last = median(&times[times.len() - window..]);
    let total: Duration = times.iter().sum();
    for (what, value) in [
        (format!("create: median of definitions 1-{window}"), first),
        (
            format!("create: median of the last {window} (of {n})"),
            last,
        ),
    ] {
        report.figure("personas-scale", what, value * 1000.0, "ms", None);
    }
    report.figure(
        "personas-scale",
        format!("create: all {n} definitions"),
        total.as_secs_f64(),
        "s",
        None,
    );
    report.figure(
        "personas-scale",
        format!("create: last {window} / first {window}"),
        last / first.max(1e-9),
        "x",
        Some(Budget::AtMost(1.5)),
    );
    eprintln!("  personas-scale: latency");
    let label = format!(", {n} definitions");
    latency::measure(&h, &endpoint, plan, "pz", &label, report).await?;
    eprintln!("  personas-scale: ingest, {n} definitions");
    let with = ingest(&h, plan, &load).await?;
    for (what, value) in [
        ("batch ev/s, no definitions".to_owned(), none),
        (format!("batch ev/s, {n} definitions"), with),
    ] {
        report.figure("personas-scale", what, value, "ev/s", None);
    }
    report.figure(
        "personas-scale",
        format!("batch: {n} definitions / none"),
        with / none.max(1.0),
        "x",
        Some(Budget::AtLeast(0.9)),
    );
    let caught =
        sync::caught_up(&h, Duration::from_secs(if plan.quick { 60 } else { 600 })).await?;
    report.check(
        format!("personas-scale: the engine computes every event with {n} definitions"),
        caught.is_some(),
        match caught {
            Some(t) => format!("caught up {:.1} s after ingest ended", t.as_secs_f64()),
            None => "the marker was not computed in time".to_owned(),
        },
    );
    let rss = h.finish()?;
    report.figure(
        "personas-scale",
        format!("peak RSS, {n} definitions"),
        mb(rss),
        "MB",
        Some(Budget::AtMost(150.0)),
    );
    Ok(rss)
}

/// Sends `load` as fast as the server takes it; events/s.
async fn ingest(h: &Harness, plan: &Plan, load: &Arc<Workload>) -> anyhow::Result<f64> {
    let target = h.target(CONNECTIONS, Pace::Closed, plan.load_limit * 3);
    let out = drive(&target, load.clone()).await?;
    anyhow::ensure!(
        out.failures == 0,
        "batch ingest failed: {:?}",
        out.first_failure
    );
    Ok(out.acked_events(load) as f64 / out.elapsed.as_secs_f64())
}

/// Creates the mix one by one; the time of each create. Waits until the
/// engine has computed the last one (over whoever exists).
async fn create(h: &Harness, n: usize) -> anyhow::Result<Vec<Duration>> {
    let mut times = Vec::with_capacity(n);
    let mut last = (String::new(), String::new());
    for i in 0..n {
        let (path, body) = scale_defs::definition(i);
        let started = Instant::now();
        let made = h
            .sluice
            .admin(Method::POST, path, body)
            .await
            .with_context(|| format!("creating definition {i}"))?;
        times.push(started.elapsed());
        last = (
            path.to_owned(),
            made["id"].as_str().unwrap_or("").to_owned(),
        );
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline {
        let got = h
            .sluice
            .admin(Method::GET, &format!("{}/{}", last.0, last.1), Value::Null)
            .await?;
        if !got["status"]["last_computed_at"].is_null() {
            return Ok(times);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    anyhow::bail!("the last definition was not computed within 120 s")
}

/// Seconds.
fn median(times: &[Duration]) -> f64 {
    let mut s: Vec<f64> = times.iter().map(Duration::as_secs_f64).collect();
    s.sort_by(f64::total_cmp);
    s.get(s.len() / 2).copied().unwrap_or(0.0)
}
