//! Scenario personas-catchup (PostgreSQL): how fast the profile engine
//! works through a backlog, on one node and on two.
//!
//! Each arm is a fresh schema: a node with its engine off takes the events,
//! then nodes with their engines on join the same database and compute
//! them all (timed from their start to the marker call computed, so a
//! node's start-up counts against it). Arms: one engine node with no
//! definitions, one with the 10 computed traits of `personas` (every event
//! read back with the person's history), two with the same traits.
//!
//! Each arm reports its rate and what the catch-up cost per event: Sluice's
//! CPU, the database's CPU, row writes and WAL.
//!
//! Full size: 200,000 batch events over 20,000 people; `--quick`: 5,000
//! over 1,000.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{ingest, sync};
use crate::load::{Call, Pace, Workload, drive};
use crate::report::{Budget, Report};
use crate::scenarios::cost::Meter;
use crate::scenarios::{CONNECTIONS, Harness, Plan};
use crate::server::Backend;

/// One arm: engine nodes, and whether the 10 traits are defined.
struct Arm {
    nodes: usize,
    traits: bool,
}

impl Arm {
    fn label(&self) -> String {
        let defs = if self.traits {
            "10 computed traits"
        } else {
            "no definitions"
        };
        let nodes = if self.nodes == 1 { "node" } else { "nodes" };
        format!("{} {nodes}, {defs}", self.nodes)
    }
}

pub async fn run(plan: &Plan, report: &mut Report) -> anyhow::Result<u64> {
    anyhow::ensure!(
        matches!(plan.server.backend, Backend::Postgres { .. }),
        "personas-catchup needs --backend postgres (engines join a running database)"
    );
    let (events, people) = if plan.quick {
        (5_000, 1_000)
    } else {
        (200_000, 20_000)
    };
    let load = Arc::new(Workload::people(Call::Batch(100), "pc", events, people));
    let wait = Duration::from_secs(if plan.quick { 60 } else { 900 });
    let mut peak = 0;
    let mut rates = Vec::new();
    for arm in [
        Arm {
            nodes: 1,
            traits: false,
        },
        Arm {
            nodes: 1,
            traits: true,
        },
        Arm {
            nodes: 2,
            traits: true,
        },
    ] {
        eprintln!("  personas-catchup: {}", arm.label());
        let (rate, rss) = run_arm(plan, &arm, &load, wait, report).await?;
        peak = peak.max(rss);
        let budget = (arm.nodes == 1).then_some(Budget::AtLeast(10_000.0));
        match rate {
            Some(rate) => {
                let what = format!("catch-up, {}", arm.label());
                report.figure("personas-catchup", what, rate, "ev/s", budget);
                rates.push((arm, rate));
            }
            None => report.check(
                format!("personas-catchup: {} computes the backlog", arm.label()),
                false,
                format!("{events} events not computed within {} s", wait.as_secs()),
            ),
        }
    }
    if let [.., (a, one), (b, two)] = rates.as_slice()
        && a.traits
        && b.nodes == 2
    {
        report.figure(
            "personas-catchup",
            "catch-up, 2 nodes / 1 node, 10 computed traits",
            two / one,
            "x",
            Some(Budget::AtLeast(1.0)),
        );
    }
    Ok(peak)
}

/// Ingests the load with the engine off, then starts the engine nodes and
/// times them to the marker, reporting what the catch-up cost (Sluice's
/// and the database's CPU, row writes and WAL per event). Returns events
/// per second, or `None` past `wait`, and the highest peak RSS.
async fn run_arm(
    plan: &Plan,
    arm: &Arm,
    load: &Arc<Workload>,
    wait: Duration,
    report: &mut Report,
) -> anyhow::Result<(Option<f64>, u64)> {
    let mut off = plan.server.clone();
    off.env
        .push(("SLUICE_PERSONAS__ENABLED".into(), "false".into()));
    let single = Plan {
        nodes: 1,
        ..plan.clone()
    };
    let mut h = Harness::start(&single, &off).await?;
    if arm.traits {
        ingest::create_all(&h, "/computed-traits", "bench trait", super::defs::traits()).await?;
    }
    let target = h.target(CONNECTIONS, Pace::Closed, plan.load_limit * 3);
    let out = drive(&target, load.clone()).await?;
    anyhow::ensure!(
        out.failures == 0,
        "batch ingest failed: {:?}",
        out.first_failure
    );
    let events = out.acked_events(load);
    let meter = Meter::start(&h).await?;
    let started = Instant::now();
    for _ in 0..arm.nodes {
        let node = h.sluice.start_peer(&plan.sluice, &plan.server).await?;
        h.peers.push(node);
    }
    let caught = sync::caught_up(&h, wait).await?;
    let elapsed = started.elapsed();
    let rate = caught.map(|_| events as f64 / elapsed.as_secs_f64());
    if rate.is_some() {
        let label = format!("catch-up, {}", arm.label());
        meter.finish(&h, report, &label, events, elapsed).await?;
    }
    Ok((rate, h.finish()?))
}
