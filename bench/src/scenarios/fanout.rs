//! Scenario 3, fan-out and isolation. A healthy destination has 5 URLs.
//! Baseline: its delivery rate alone. Then a second destination whose only
//! URL hangs (or answers 503 every time) joins the same source, and the same
//! load runs again. The ratio of the two rates shows how much the broken
//! destination slows the healthy one (1.0 = not at all). Each variant runs
//! on its own server so one's leftovers cannot disturb the other.

use std::sync::Arc;
use std::time::Instant;

use crate::load::{Call, Pace, Workload, drive};
use crate::report::Report;
use crate::scenarios::{CONNECTIONS, Harness, Plan, audit_detail};
use crate::sink::{Endpoint, Mode};

const URLS: usize = 5;

pub async fn run(plan: &Plan, report: &mut Report) -> anyhow::Result<u64> {
    let mut peak = 0;
    for (bad, label) in [(Mode::Hang, "hanging"), (Mode::Unavailable, "always-503")] {
        peak = peak.max(variant(plan, report, bad, label).await?);
    }
    Ok(peak)
}

async fn variant(plan: &Plan, report: &mut Report, bad: Mode, label: &str) -> anyhow::Result<u64> {
    let h = Harness::start(plan, &plan.server).await?;
    let healthy: Vec<Endpoint> = (0..URLS).map(|_| h.sink.endpoint(Mode::Ok)).collect();
    h.webhook("healthy", &healthy.iter().collect::<Vec<_>>())
        .await?;

    let mut expected = Vec::new();
    let baseline = phase(plan, &h, &healthy, "fb", &mut expected).await?;
    let broken = h.sink.endpoint(bad);
    h.webhook("broken", &[&broken]).await?;
    // A baseline that never finished leaves nothing to compare against.
    let disturbed = match baseline {
        Some(_) => phase(plan, &h, &healthy, "fd", &mut expected).await?,
        None => None,
    };

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
            None,
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
    if baseline.is_some() {
        let refused = h.sink.audit(&broken, &[]).refused;
        report.check(
            format!("fan-out: the {label} dest was exercised"),
            refused > 0,
            format!("{refused} requests refused or left hanging"),
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
