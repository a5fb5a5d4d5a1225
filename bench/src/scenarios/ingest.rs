//! Scenario 1, ingest: events/s accepted (each answered only after its
//! commit) via `/v1/batch` (100 events per request) and via single
//! `/v1/track` calls, both over 64 keep-alive connections. The source has no
//! destination, so this measures the collection path alone.

use std::sync::Arc;

use crate::load::{Call, Outcome, Pace, Workload, drive};
use crate::report::{Budget, Report};
use crate::scenarios::cost::Meter;
use crate::scenarios::{CONNECTIONS, Harness, Plan, ms};

pub async fn run(plan: &Plan, report: &mut Report) -> anyhow::Result<u64> {
    let h = Harness::start(plan, &plan.server).await?;
    let target = h.target(CONNECTIONS, Pace::Closed, plan.load_limit);

    let batch = Arc::new(Workload::new(Call::Batch(100), "ib", plan.batch_events));
    let meter = Meter::start(&h).await?;
    let out = drive(&target, batch.clone()).await?;
    let batch_events = out.acked_events(&batch);
    meter
        .finish(&h, report, "ingest batch", batch_events, out.elapsed)
        .await?;
    figures(
        report,
        "batch (100 ev/req, 64 conns)",
        &out,
        &batch,
        Some(150_000.0),
    );
    report.figure(
        "ingest",
        "mean event size",
        batch.mean_event_bytes() as f64,
        "bytes",
        None,
    );
    acknowledged(report, "ingest batch", &out, &batch);

    let track = Arc::new(Workload::new(Call::Track, "it", plan.track_events));
    let meter = Meter::start(&h).await?;
    let out = drive(&target, track.clone()).await?;
    meter
        .finish(
            &h,
            report,
            "ingest track",
            out.acked_events(&track),
            out.elapsed,
        )
        .await?;
    figures(report, "track (1 ev/req, 64 conns)", &out, &track, None);
    acknowledged(report, "ingest track", &out, &track);

    let stored = batch_events + out.acked_events(&track);
    report.figure(
        "resources",
        "disk per stored event, no destination",
        h.sluice.disk_bytes() as f64 / stored.max(1) as f64,
        "bytes",
        None,
    );
    h.finish()
}

fn figures(
    report: &mut Report,
    label: &str,
    out: &Outcome,
    workload: &Workload,
    budget: Option<f64>,
) {
    let rate = out.acked_events(workload) as f64 / out.elapsed.as_secs_f64();
    report.figure(
        "ingest",
        format!("{label}: events/s"),
        rate,
        "ev/s",
        budget.map(Budget::AtLeast),
    );
    let lat = &out.latency_us;
    for (name, q) in [("p50", 0.5), ("p99", 0.99)] {
        report.figure(
            "ingest",
            format!("{label}: request {name}"),
            ms(lat.value_at_quantile(q)),
            "ms",
            None,
        );
    }
}

/// Correctness: no request failed, and some were answered at all.
pub fn acknowledged(report: &mut Report, name: &str, out: &Outcome, workload: &Workload) {
    let detail = format!(
        "{} of {} requests answered 200, {} failed{}",
        out.acked.len(),
        workload.requests(),
        out.failures,
        out.first_failure
            .as_deref()
            .map(|f| format!(" (first: {f})"))
            .unwrap_or_default()
    );
    report.check(
        format!("{name}: every request acknowledged"),
        out.failures == 0 && !out.acked.is_empty(),
        detail,
    );
}

pub fn per_million(cpu_secs: f64, events: usize) -> f64 {
    cpu_secs / events.max(1) as f64 * 1_000_000.0
}
