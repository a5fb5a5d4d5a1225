//! Scenario: the cost of source schema and filtering at ingest, and the
//! schema's memory bound.
//!
//! Three arms, each a fresh server with one Webhooks destination on the
//! source (the same in every arm, so every arm writes one delivery row per
//! event and the ratio isolates the features), driven with the ingest batch
//! workload (100 events per request, 64 connections), interleaved over two
//! rounds so machine noise hits every arm alike; the best round of each arm
//! counts:
//! - **before**: schema tracking off, no rules, no filters (the ingest path
//!   as it was before schema and filtering existed);
//! - **schema + rules**: schema tracking on, 50 block rules on the source
//!   (48 blocked event names, one blocked identify trait, one blocked group
//!   trait; none matches the load, so every event is still stored as usual);
//! - **+ 5 filters**: as above, plus 5 filters on the destination that every
//!   event is tested against and none acts on (type list, event list, two
//!   property conditions on properties the events carry, and a
//!   `drop_fields` of PII keys the events do not carry), the usual case of
//!   filters guarding against rare events.
//!
//! Memory: a tracker with the default cap (10,000 entries per source) is fed
//! 10,000 distinct event names with 50 properties each, in process, and its
//! estimated heap is reported with the entries kept and the overflow.

use std::sync::Arc;

use serde_json::json;
use sluice_schema::{Shape, Tracker};

use crate::load::{Call, Pace, Workload, drive};
use crate::report::{Budget, Report};
use crate::scenarios::ingest::acknowledged;
use crate::scenarios::{CONNECTIONS, Harness, Plan, mb};
use crate::sink::Mode;

/// The filters arm's five filters (shared with `sluice-schema`'s
/// `filter_cost` example).
const FILTERS: &str = include_str!("../../samples/schema-filters.json");

#[derive(Clone, Copy, PartialEq, Eq)]
enum Arm {
    Before,
    Rules,
    Filters,
}

impl Arm {
    fn label(self) -> &'static str {
        match self {
            Arm::Before => "before (no schema, rules, filters)",
            Arm::Rules => "schema tracking + 50 block rules",
            Arm::Filters => "schema tracking + 50 block rules + 5 destination filters",
        }
    }
}

pub async fn run(plan: &Plan, report: &mut Report) -> anyhow::Result<u64> {
    let events = (plan.batch_events / 3).max(1000);
    let rounds = if plan.quick { 1 } else { 2 };
    let arms = [Arm::Before, Arm::Rules, Arm::Filters];
    let mut best = [0f64; 3];
    let mut peak = 0;
    for round in 0..rounds {
        for (i, arm) in arms.into_iter().enumerate() {
            let (rate, rss) = one(plan, report, arm, events, round).await?;
            eprintln!("  round {round}: {}: {rate:.0} ev/s", arm.label());
            best[i] = best[i].max(rate);
            peak = peak.max(rss);
        }
    }
    for (i, arm) in arms.into_iter().enumerate() {
        report.figure(
            "schema",
            format!("{}: events/s", arm.label()),
            best[i],
            "ev/s",
            None,
        );
    }
    let base = best[0].max(1.0);
    report.figure(
        "schema",
        "ratio: schema + rules / before",
        best[1] / base,
        "x",
        None,
    );
    report.figure(
        "schema",
        "ratio: schema + rules + filters / before",
        best[2] / base,
        "x",
        Some(Budget::AtLeast(0.90)),
    );
    memory(report);
    Ok(peak)
}

async fn one(
    plan: &Plan,
    report: &mut Report,
    arm: Arm,
    events: usize,
    round: usize,
) -> anyhow::Result<(f64, u64)> {
    let mut options = plan.server.clone();
    if arm == Arm::Before {
        options
            .env
            .push(("SLUICE_SCHEMA__ENABLED".into(), "false".into()));
    }
    let h = Harness::start(plan, &options).await?;
    if arm != Arm::Before {
        let mut blocked: Vec<String> = (0..48).map(|i| format!("Blocked Event {i}")).collect();
        blocked.sort();
        let rules = json!({"blocked_events": blocked,
                           "blocked_identify_traits": ["ssn"],
                           "blocked_group_traits": ["internal_id"]});
        h.sluice
            .admin(
                reqwest::Method::PUT,
                &format!("/sources/{}/rules", h.source.id),
                rules,
            )
            .await?;
    }
    let endpoint = h.sink.endpoint(Mode::Ok);
    let dst = h.webhook("filtered", &[&endpoint]).await?;
    if arm == Arm::Filters {
        let filters: serde_json::Value = serde_json::from_str(FILTERS)?;
        h.sluice
            .admin(
                reqwest::Method::PUT,
                &format!("/destinations/{dst}/filters"),
                filters,
            )
            .await?;
    }
    let target = h.target(CONNECTIONS, Pace::Closed, plan.load_limit);
    let prefix = format!("s{round}{}", arm as u8);
    let workload = Arc::new(Workload::new(Call::Batch(100), &prefix, events));
    let out = drive(&target, workload.clone()).await?;
    acknowledged(
        report,
        &format!("schema: {}, round {round}", arm.label()),
        &out,
        &workload,
    );
    let rate = out.acked_events(&workload) as f64 / out.elapsed.as_secs_f64();
    Ok((rate, h.finish()?))
}

fn memory(report: &mut Report) {
    let tracker = Tracker::new(10_000);
    let properties: Vec<String> = (0..50).map(|p| format!("property_{p:02}")).collect();
    for e in 0..10_000 {
        let props: serde_json::Map<String, serde_json::Value> =
            properties.iter().map(|p| (p.clone(), json!(1))).collect();
        let body = json!({"type": "track", "event": format!("Distinct Event {e:05}"),
                          "properties": props})
        .to_string();
        tracker.observe("src", [&Shape::of(&body, "track")], 0);
    }
    report.figure(
        "schema",
        "aggregate memory, 10,000 event names x 50 properties (cap 10,000)",
        mb(tracker.approx_bytes() as u64),
        "MB",
        Some(Budget::AtMost(16.0)),
    );
    let taken = tracker.take();
    let (kept, overflow) = taken
        .first()
        .map(|(_, d)| (d.entries.len(), d.overflow))
        .unwrap_or_default();
    report.figure(
        "schema",
        "entries kept at the cap",
        kept as f64,
        "entries",
        None,
    );
    report.figure(
        "schema",
        "observations counted as overflow",
        overflow as f64,
        "obs",
        None,
    );
}
