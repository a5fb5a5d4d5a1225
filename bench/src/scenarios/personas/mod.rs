//! Scenario personas: the profile engine's budgets (computed traits and
//! audiences).
//!
//! - [`ingest`]: the same events into four fresh servers, engine off, on
//!   with no definitions (the default), with 10 computed traits, with 20
//!   audiences; ratios within the run.
//! - [`sync`]: on the server with no definitions, once the engine has
//!   computed every event: the backfill of a new computed trait, an
//!   audience's first sync and the expiry of its window for everyone.
//! - [`latency`]: event 200 → identify at the sink at 2,000 events/s.
//! - [`defs`]: the definitions.
//! - [`catchup`]: `personas-catchup`, the engine working through a
//!   backlog on one and two PostgreSQL nodes.
//! - [`scale`]: `personas-scale`, 10,000 definitions on one node
//!   ([`scale_defs`]: their mix).
//!
//! Full size: 1,000,000 batch events over 100,000 people (plus 60,000
//! single calls); `--quick`: 5,000 over 1,000.

mod catchup;
mod defs;
mod ingest;
mod latency;
mod scale;
mod scale_defs;
mod sync;

use std::time::Duration;

use ingest::{Arm, Loads, Rates};

use crate::report::{Budget, Report};
use crate::scenarios::{Harness, Plan, mb};

/// Sizes of the personas scenario.
pub struct Sizes {
    pub events: usize,
    pub track: usize,
    pub people: usize,
    /// Longest wait for any one engine phase.
    pub wait: Duration,
    /// Time between the first sync's start and the window boundary.
    pub window_margin: Duration,
}

impl Sizes {
    fn new(plan: &Plan) -> Sizes {
        if plan.quick {
            Sizes {
                events: 5_000,
                track: 1_000,
                people: 1_000,
                wait: Duration::from_secs(30),
                window_margin: Duration::from_secs(5),
            }
        } else {
            Sizes {
                events: 1_000_000,
                track: 60_000,
                people: 100_000,
                wait: Duration::from_secs(300),
                window_margin: Duration::from_secs(45),
            }
        }
    }
}

fn ratio(report: &mut Report, what: &str, with: f64, without: f64, budget: f64) {
    report.figure(
        "personas",
        what.to_owned(),
        with / without.max(1.0),
        "x",
        Some(Budget::AtLeast(budget)),
    );
}

/// 10,000 definitions: create time, latency, ingest, memory.
pub async fn run_scale(plan: &Plan, report: &mut Report) -> anyhow::Result<u64> {
    scale::run(plan, report).await
}

/// The engine's catch-up on one and two nodes (PostgreSQL).
pub async fn run_catchup(plan: &Plan, report: &mut Report) -> anyhow::Result<u64> {
    catchup::run(plan, report).await
}

/// The event → identify latency phase alone.
pub async fn run_latency(plan: &Plan, report: &mut Report) -> anyhow::Result<u64> {
    latency::run(plan, report).await
}

/// The whole-population phases alone, on a server with no definitions:
/// ingest, catch-up, backfill, first sync and window expiry (no ratios).
pub async fn run_population(plan: &Plan, report: &mut Report) -> anyhow::Result<u64> {
    let sizes = Sizes::new(plan);
    let loads = Loads::new(&sizes);
    eprintln!("  personas: ingest, NoDefinitions");
    let (h, none) = ingest::run_arm(plan, Arm::NoDefinitions, &loads).await?;
    report.figure(
        "personas",
        "batch ev/s, engine on, no definitions",
        none.batch,
        "ev/s",
        None,
    );
    population(h, &sizes, &loads, None, report).await
}

pub async fn run(plan: &Plan, report: &mut Report) -> anyhow::Result<u64> {
    let sizes = Sizes::new(plan);
    let loads = Loads::new(&sizes);
    let mut peak = 0u64;
    let mut rates: Vec<(Arm, Rates)> = Vec::new();
    for arm in [Arm::EngineOff, Arm::Traits, Arm::Audiences] {
        eprintln!("  personas: ingest, {arm:?}");
        let (h, r) = ingest::run_arm(plan, arm, &loads).await?;
        let rss = h.finish()?;
        if arm != Arm::EngineOff {
            report.figure(
                "personas",
                format!("peak RSS, {arm:?}"),
                mb(rss),
                "MB",
                Some(Budget::AtMost(150.0)),
            );
        }
        peak = peak.max(rss);
        rates.push((arm, r));
    }
    // Last, and kept running for the whole-population phases.
    eprintln!("  personas: ingest, NoDefinitions");
    let (h, none) = ingest::run_arm(plan, Arm::NoDefinitions, &loads).await?;
    let of = |arm: Arm| rates.iter().find(|(a, _)| *a == arm).map(|(_, r)| r);
    let (Some(off), Some(traits), Some(audiences)) =
        (of(Arm::EngineOff), of(Arm::Traits), of(Arm::Audiences))
    else {
        anyhow::bail!("an ingest arm is missing");
    };
    ratios(report, off, &none, traits, audiences);
    peak = peak.max(population(h, &sizes, &loads, Some(off.disk), report).await?);
    eprintln!("  personas: latency");
    peak = peak.max(latency::run(plan, report).await?);
    Ok(peak)
}

/// The ingest figures of the four arms and their budgeted ratios.
fn ratios(report: &mut Report, off: &Rates, none: &Rates, traits: &Rates, audiences: &Rates) {
    for (name, value) in [
        ("batch ev/s, engine off", off.batch),
        ("batch ev/s, engine on, no definitions", none.batch),
        ("batch ev/s, 10 computed traits", traits.batch),
        ("batch ev/s, 20 audiences", audiences.batch),
        ("track ev/s, engine off", off.track.unwrap_or(0.0)),
        (
            "track ev/s, engine on, no definitions",
            none.track.unwrap_or(0.0),
        ),
    ] {
        report.figure("personas", name, value, "ev/s", None);
    }
    ratio(
        report,
        "batch: engine on, no definitions / off",
        none.batch,
        off.batch,
        0.95,
    );
    ratio(
        report,
        "track: engine on, no definitions / off",
        none.track.unwrap_or(0.0),
        off.track.unwrap_or(0.0),
        0.95,
    );
    ratio(
        report,
        "batch: 10 computed traits / none",
        traits.batch,
        none.batch,
        0.85,
    );
    ratio(
        report,
        "batch: 20 audiences / none",
        audiences.batch,
        none.batch,
        0.85,
    );
}

/// On the no-definitions server once ingest ended: the catch-up, then the
/// backfill, first sync and expiry. Returns the server's peak RSS.
async fn population(
    h: Harness,
    sizes: &Sizes,
    loads: &Loads,
    off_disk: Option<u64>,
    report: &mut Report,
) -> anyhow::Result<u64> {
    let caught = sync::caught_up(&h, sizes.wait).await?;
    let total = sizes.events + sizes.track;
    report.check(
        "personas: the engine computes every ingested event",
        caught.is_some(),
        match caught {
            Some(t) => format!(
                "{total} events computed {:.1} s after ingest ended",
                t.as_secs_f64()
            ),
            None => format!("{total} events; the marker was not computed in time"),
        },
    );
    if let Some(off_disk) = off_disk {
        let state = h.sluice.disk_bytes().saturating_sub(off_disk);
        report.figure(
            "personas",
            "profile state per person (disk, engine on - off)",
            state as f64 / sizes.people as f64,
            "bytes",
            None,
        );
    }
    if caught.is_some() {
        sync::backfill(&h, sizes, report).await?;
        let endpoint = h.sink.person_endpoint();
        let since = chrono::Utc::now() - loads.timestamp();
        let window = since.num_seconds() + 1 + sizes.window_margin.as_secs() as i64;
        let boundary = loads.timestamp() + chrono::Duration::seconds(window);
        sync::first_sync_and_expiry(&h, sizes, boundary, window, &endpoint, report).await?;
    }
    let rss = h.finish()?;
    report.figure(
        "personas",
        "peak RSS, no definitions + backfill, sync, expiry",
        mb(rss),
        "MB",
        Some(Budget::AtMost(150.0)),
    );
    Ok(rss)
}
