//! Scenario 3, fan-out and isolation. A healthy destination has 5 URLs.
//! Baseline: its delivery rate alone. Then a second destination whose only
//! URL hangs (or answers 503 every time) joins the same source, and the same
//! load runs again; in the last two variants, one destination of 5 URLs
//! whose host names never resolve (the reserved `.invalid` domain) joins
//! instead, then 20 such destinations.
//! The ratio of the two rates shows how much the broken destinations slow
//! the healthy one (1.0 = not at all). Each variant runs on its own server
//! so one's leftovers cannot disturb the other.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::load::{Call, Pace, Workload, drive};
use crate::report::{Budget, Report};
use crate::scenarios::{CONNECTIONS, Harness, Plan, audit_detail};
use crate::sink::{Endpoint, Mode};

const URLS: usize = 5;

/// Destinations with unresolvable names in the last variant, of [`URLS`]
/// URLs each: the setup in which name lookups on shared blocking threads
/// once starved a healthy neighbour.
const UNRESOLVABLE: usize = 20;

/// What joins the healthy destination.
#[derive(Clone, Copy)]
enum Neighbour {
    /// One destination whose only URL answers in this mode.
    Sink(Mode),
    /// This many destinations of [`URLS`] URLs whose names never resolve.
    Unresolvable(usize),
}

pub async fn run(plan: &Plan, report: &mut Report) -> anyhow::Result<u64> {
    let mut peak = 0;
    for (bad, label) in [
        (Neighbour::Sink(Mode::Hang), "hanging"),
        (Neighbour::Sink(Mode::Unavailable), "always-503"),
        (Neighbour::Unresolvable(1), "failing-DNS"),
        (Neighbour::Unresolvable(UNRESOLVABLE), "20-failing-DNS"),
    ] {
        peak = peak.max(variant(plan, report, bad, label).await?);
    }
    Ok(peak)
}

async fn variant(
    plan: &Plan,
    report: &mut Report,
    bad: Neighbour,
    label: &str,
) -> anyhow::Result<u64> {
    let h = Harness::start(plan, &plan.server).await?;
    let healthy: Vec<Endpoint> = (0..URLS).map(|_| h.sink.endpoint(Mode::Ok)).collect();
    h.webhook("healthy", &healthy.iter().collect::<Vec<_>>())
        .await?;

    let mut expected = Vec::new();
    let baseline = phase(plan, &h, &healthy, "fb", &mut expected).await?;
    let mut nowhere = Vec::new();
    let broken = match bad {
        Neighbour::Sink(mode) => {
            let broken = h.sink.endpoint(mode);
            h.webhook("broken", &[&broken]).await?;
            Some(broken)
        }
        Neighbour::Unresolvable(count) => {
            for d in 0..count {
                let urls: Vec<Endpoint> = (0..URLS)
                    .map(|u| Endpoint {
                        id: usize::MAX,
                        url: format!("http://hook-{d}-{u}.sluice-bench.invalid/in"),
                    })
                    .collect();
                let id = h
                    .webhook(&format!("nowhere-{d}"), &urls.iter().collect::<Vec<_>>())
                    .await?;
                nowhere.push(id);
            }
            None
        }
    };
    // Threads of the server while the neighbours fail, at most.
    let most_threads = Arc::new(AtomicUsize::new(0));
    let sampler = tokio::spawn({
        let (most, pid) = (most_threads.clone(), h.sluice.pid());
        async move {
            loop {
                let now = std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, Iterator::count);
                most.fetch_max(now, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    });
    // A baseline that never finished leaves nothing to compare against.
    let disturbed = match baseline {
        Some(_) => phase(plan, &h, &healthy, "fd", &mut expected).await?,
        None => None,
    };
    sampler.abort();
    report.figure(
        "fan-out",
        format!("server threads beside a {label} dest, at most"),
        most_threads.load(Ordering::Relaxed) as f64,
        "threads",
        None,
    );

    if let (Some(base), Some(with)) = (baseline, disturbed) {
        report.figure(
            "fan-out",
            "healthy 5-URL dest alone: webhooks/s",
            base,
            "hooks/s",
            None,
        );
        report.figure(
            "fan-out",
            format!("healthy dest next to a {label} dest: webhooks/s"),
            with,
            "hooks/s",
            None,
        );
        report.figure(
            "fan-out",
            format!("ratio with {label} dest vs alone"),
            with / base,
            "x",
            // The same as one hanging destination: what a neighbour may cost.
            matches!(bad, Neighbour::Unresolvable(1)).then_some(Budget::AtLeast(0.9)),
        );
    }
    let audits: Vec<_> = healthy.iter().map(|e| h.sink.audit(e, &expected)).collect();
    let clean = audits.iter().all(|a| a.is_clean());
    let worst = audits
        .iter()
        .find(|a| !a.is_clean())
        .or(audits.first())
        .map(audit_detail)
        .unwrap_or_default();
    report.check(
        format!("fan-out next to {label} dest: each of {URLS} URLs got every event once"),
        baseline.is_some() && disturbed.is_some() && clean,
        format!("worst URL: {worst}"),
    );
    if let (Some(broken), true) = (&broken, baseline.is_some()) {
        let refused = h.sink.audit(broken, &[]).refused;
        report.check(
            format!("fan-out: the {label} dest was exercised"),
            refused > 0,
            format!("{refused} requests refused or left hanging"),
        );
    }
    if let (Some(first), true) = (nowhere.first(), baseline.is_some()) {
        let page = h
            .sluice
            .admin(
                reqwest::Method::GET,
                &format!("/deliveries?destination_id={first}&state=pending&limit=500"),
                serde_json::Value::Null,
            )
            .await?;
        // Most are held back by the open circuit breaker, never tried.
        let rows = page["data"].as_array().cloned().unwrap_or_default();
        let failed_on_dns = rows
            .iter()
            .filter(|d| {
                d["last_error"]
                    .as_str()
                    .is_some_and(|e| e.contains("DNS lookup failed"))
            })
            .count();
        report.check(
            format!("fan-out: the {label} dests were tried and failed on DNS"),
            failed_on_dns > 0,
            format!(
                "{failed_on_dns} of {} pending deliveries listed",
                rows.len()
            ),
        );
    }
    h.finish()
}

/// Ingests one workload and waits for all healthy URLs to have it; returns
/// the healthy destination's webhooks/s from first send to last receipt.
async fn phase(
    plan: &Plan,
    h: &Harness,
    healthy: &[Endpoint],
    prefix: &str,
    expected: &mut Vec<String>,
) -> anyhow::Result<Option<f64>> {
    let workload = Arc::new(Workload::new(Call::Batch(100), prefix, plan.fanout_events));
    let start = Instant::now();
    let target = h.target(CONNECTIONS, Pace::Closed, plan.load_limit);
    let out = drive(&target, workload.clone()).await?;
    let accepted = out.acked_ids(&workload);
    let events = accepted.len();
    expected.extend(accepted);
    let done = h
        .sink
        .wait_ok(healthy, expected.len() as u64, plan.delivery_limit)
        .await;
    Ok(done.map(|at| (events * healthy.len()) as f64 / at.duration_since(start).as_secs_f64()))
}
