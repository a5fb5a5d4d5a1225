//! Scenario 4, retry storm: the sink answers 503 to a random half of the
//! requests. Sluice must retry until each event gets its 2xx, and then stop:
//! the sink counts 2xx answers per messageId and each must be exactly 1.
//! The server runs with 50 ms base / 500 ms cap backoff so the storm settles
//! in seconds.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::load::{Call, Pace, Workload, drive};
use crate::report::Report;
use crate::scenarios::{CONNECTIONS, Harness, Plan, audit_detail};
use crate::sink::Mode;

pub async fn run(plan: &Plan, report: &mut Report) -> anyhow::Result<u64> {
    let h = Harness::start(plan, &plan.server).await?;
    let endpoint = h.sink.endpoint(Mode::Flaky);
    h.webhook("flaky", &[&endpoint]).await?;

    let workload = Arc::new(Workload::new(Call::Batch(100), "rs", plan.retry_events));
    let start = Instant::now();
    let target = h.target(CONNECTIONS, Pace::Closed, plan.load_limit);
    let out = drive(&target, workload.clone()).await?;
    let accepted = out.acked_ids(&workload);
    let done = h
        .sink
        .wait_ok(
            std::slice::from_ref(&endpoint),
            accepted.len() as u64,
            plan.delivery_limit,
        )
        .await;
    if let Some(done) = done {
        report.figure(
            "retry",
            "events delivered/s with 50% random 503s",
            accepted.len() as f64 / done.duration_since(start).as_secs_f64(),
            "ev/s",
            None,
        );
    }
    // Give a stray second 2xx the time to arrive before counting.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let audit = h.sink.audit(&endpoint, &accepted);
    let requests = audit.refused + h.sink.ok_count(&endpoint);
    report.figure(
        "retry",
        "requests per event",
        requests as f64 / accepted.len().max(1) as f64,
        "req/ev",
        None,
    );
    report.check(
        "retry storm: every event answered 2xx exactly once",
        done.is_some() && out.failures == 0 && !accepted.is_empty() && audit.is_clean(),
        format!(
            "{} failed ingest requests; {} 503s answered; {}",
            out.failures,
            audit.refused,
            audit_detail(&audit)
        ),
    );
    report.check(
        "retry storm: the sink did refuse some requests",
        audit.refused > 0,
        format!("{} of {requests} requests answered 503", audit.refused),
    );
    h.finish()
}
