//! The scenarios, their sizes, and the harness each one starts from: a fresh
//! `sluice` child, a fresh sink and one source.
//!
//! - [`ingest`]: accepted events/s via `/v1/batch` and `/v1/track`.
//! - [`e2e`]: webhooks/s draining a backlog, and ingest→sink latency at a
//!   fixed offered rate; disk per stored event before and after delivery.
//! - [`fanout`]: a healthy 5-URL destination next to a hanging or failing one.
//! - [`retry`]: half the answers are 503; every event still lands exactly once.
//! - [`schema`]: ingest with schema tracking, 50 block rules and 5 destination
//!   filters against ingest without them, same run; schema memory at the cap.
//! - [`slow`]: 1,000 clients without credentials holding half-sent bodies:
//!   resident memory during and after, against the idle figure.
//! - [`personas`]: the profile engine's cost to ingest (off, on, 10 traits,
//!   20 audiences), backfill, first sync, window expiry, event → identify;
//!   `personas-latency` runs the last phase alone (for quick A/B runs);
//!   `personas-scale`: 10,000 definitions (create time, latency, ingest, memory).
//!   `personas-catchup`: the engine's backlog rate on one and two nodes
//!   (PostgreSQL).
//! - [`privacy`]: suppression's cost to ingest, and the time of a purge.
//! - [`dashboard`]: each dashboard page's render time with 1,000,000 events.
//! - [`health`]: the delivery health overview's read time over the
//!   aggregates of 10,000,000 events, and ingest with them on against off.
//! - [`dedup`]: ingest with deduplication against ingest without it, with
//!   10,000,000 message ids in the window; the window's memory and rebuild.
//!
//! Resource figures (peak RSS, CPU per million events, disk) are taken by the
//! scenarios that produce them and reported under `resources`.

mod cost;
mod dashboard;
mod dedup;
mod e2e;
mod fanout;
mod health;
mod ingest;
mod personas;
mod privacy;
mod retry;
mod schema;
mod slow;

use std::path::PathBuf;
use std::time::Duration;

use crate::load::{Pace, Target};
use crate::report::{Budget, Report};
use crate::server::{Backend, ServerOptions, Sluice, Source};
use crate::sink::{Endpoint, Sink};

/// The shared secret every bench destination signs with.
pub const SECRET: &str = "sluice-bench-shared-secret";

/// Load-generator connections for the throughput runs.
pub const CONNECTIONS: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Scenario {
    Ingest,
    EndToEnd,
    Fanout,
    RetryStorm,
    Schema,
    SlowClients,
    Personas,
    PersonasLatency,
    PersonasPopulation,
    PersonasScale,
    PersonasCatchup,
    Privacy,
    Dashboard,
    Dedup,
    Health,
}

impl Scenario {
    pub const ALL: [Scenario; 7] = [
        Scenario::Ingest,
        Scenario::EndToEnd,
        Scenario::Fanout,
        Scenario::RetryStorm,
        Scenario::Schema,
        Scenario::SlowClients,
        Scenario::Personas,
    ];

    fn name(self) -> &'static str {
        match self {
            Scenario::Ingest => "ingest",
            Scenario::EndToEnd => "end-to-end",
            Scenario::Fanout => "fan-out and isolation",
            Scenario::RetryStorm => "retry storm",
            Scenario::Schema => "schema and filtering",
            Scenario::SlowClients => "slow clients",
            Scenario::Personas => "personas",
            Scenario::PersonasLatency => "personas latency",
            Scenario::PersonasPopulation => "personas population",
            Scenario::PersonasScale => "personas at scale",
            Scenario::PersonasCatchup => "personas catch-up",
            Scenario::Privacy => "privacy",
            Scenario::Dashboard => "dashboard",
            Scenario::Dedup => "deduplication",
            Scenario::Health => "delivery health",
        }
    }
}

/// Sizes and limits of one run. Full sizes keep the whole suite under five
/// minutes on two cores; quick sizes keep it under one.
#[derive(Debug, Clone)]
pub struct Plan {
    pub quick: bool,
    pub sluice: PathBuf,
    pub server: ServerOptions,
    pub batch_events: usize,
    pub track_events: usize,
    pub drain_events: usize,
    pub latency_rate: f64,
    pub latency_secs: f64,
    pub fanout_events: usize,
    pub retry_events: usize,
    /// Sluice processes per scenario (more than one needs PostgreSQL); the
    /// load generator spreads its connections over them.
    pub nodes: usize,
    /// Upper bound on any one load phase.
    pub load_limit: Duration,
    /// Upper bound on waiting for deliveries after a load phase.
    pub delivery_limit: Duration,
}

impl Plan {
    pub fn new(
        quick: bool,
        sluice: PathBuf,
        synchronous: String,
        log_dir: Option<PathBuf>,
        backend: Backend,
    ) -> Plan {
        // The production default answer time, 5 s.
        let server = ServerOptions {
            synchronous,
            timeout_ms: 5_000,
            log_dir,
            env: Vec::new(),
            backend,
            seed: None,
        };
        let scale = |full: usize, small: usize| if quick { small } else { full };
        Plan {
            quick,
            sluice,
            server,
            batch_events: scale(600_000, 20_000),
            // About 4 s of single calls: 60,000 (1.3 s) left each figure at
            // the mercy of one noisy second (BENCHMARKS.md,
            // "What is measured").
            track_events: scale(200_000, 2_000),
            drain_events: scale(200_000, 10_000),
            latency_rate: 2_000.0,
            latency_secs: if quick { 2.0 } else { 15.0 },
            fanout_events: scale(10_000, 500),
            retry_events: scale(30_000, 2_000),
            nodes: 1,
            load_limit: Duration::from_secs(if quick { 15 } else { 60 }),
            delivery_limit: Duration::from_secs(if quick { 20 } else { 40 }),
        }
    }
}

/// Runs `scenarios` in order; a scenario that errors out is a failed check,
/// and the run goes on with the next one.
pub async fn run_all(plan: &Plan, scenarios: &[Scenario], report: &mut Report) {
    let mut peak_rss = 0u64;
    for &scenario in scenarios {
        eprintln!("== {}", scenario.name());
        let result = match scenario {
            Scenario::Ingest => ingest::run(plan, report).await,
            Scenario::EndToEnd => e2e::run(plan, report).await,
            Scenario::Fanout => fanout::run(plan, report).await,
            Scenario::RetryStorm => retry::run(plan, report).await,
            Scenario::Schema => schema::run(plan, report).await,
            Scenario::SlowClients => slow::run(plan, report).await,
            Scenario::Personas => personas::run(plan, report).await,
            Scenario::PersonasLatency => personas::run_latency(plan, report).await,
            Scenario::PersonasPopulation => personas::run_population(plan, report).await,
            Scenario::PersonasScale => personas::run_scale(plan, report).await,
            Scenario::PersonasCatchup => personas::run_catchup(plan, report).await,
            Scenario::Privacy => privacy::run(plan, report).await,
            Scenario::Dashboard => dashboard::run(plan, report).await,
            Scenario::Dedup => dedup::run(plan, report).await,
            Scenario::Health => health::run(plan, report).await,
        };
        match result {
            Ok(rss) => peak_rss = peak_rss.max(rss),
            Err(e) => report.check(
                format!("{}: runs to completion", scenario.name()),
                false,
                format!("{e:#}"),
            ),
        }
    }
    if peak_rss > 0 {
        report.figure(
            "resources",
            "peak RSS of sluice, any scenario (VmHWM)",
            mb(peak_rss),
            "MB",
            Some(Budget::AtMost(150.0)),
        );
    }
}

/// One scenario's world: the server (and its peers when the plan has more
/// than one node), the sink and a source. Peers are declared first so they
/// stop before the first node, which owns the PostgreSQL schema.
pub struct Harness {
    pub peers: Vec<Sluice>,
    pub sluice: Sluice,
    pub sink: Sink,
    pub source: Source,
}

impl Harness {
    pub async fn start(plan: &Plan, options: &ServerOptions) -> anyhow::Result<Harness> {
        let sink = Sink::start(SECRET)?;
        let sluice = Sluice::start(&plan.sluice, options).await?;
        let mut peers = Vec::new();
        for _ in 1..plan.nodes {
            peers.push(sluice.start_peer(&plan.sluice, options).await?);
        }
        let source = sluice.create_source("bench").await?;
        for peer in &peers {
            peer.wait_for_key(&source).await?;
        }
        Ok(Harness {
            peers,
            sluice,
            sink,
            source,
        })
    }

    /// A Webhooks destination on the source, signing with the bench secret.
    /// With peers, waits out their routing refresh (500 ms): until then a
    /// peer routes the source's events to no destination, as documented.
    pub async fn webhook(&self, name: &str, endpoints: &[&Endpoint]) -> anyhow::Result<String> {
        let urls: Vec<String> = endpoints.iter().map(|e| e.url.clone()).collect();
        let id = self
            .sluice
            .create_webhook(&self.source.id, name, &urls, SECRET)
            .await?;
        if !self.peers.is_empty() {
            tokio::time::sleep(Duration::from_millis(1_200)).await;
        }
        Ok(id)
    }

    pub fn target(&self, connections: usize, pace: Pace, time_limit: Duration) -> Target {
        Target {
            addrs: self.nodes().map(|n| n.addr).collect(),
            authorization: self.source.authorization.clone(),
            connections,
            pace,
            time_limit,
        }
    }

    /// Every node, the first one first.
    pub fn nodes(&self) -> impl Iterator<Item = &Sluice> {
        std::iter::once(&self.sluice).chain(&self.peers)
    }

    /// CPU seconds of each node so far, the first one first.
    pub fn cpu_secs(&self) -> anyhow::Result<Vec<f64>> {
        self.nodes().map(|n| Ok(n.usage()?.cpu_secs)).collect()
    }

    /// Stops the servers, peers first; returns the highest peak RSS in bytes.
    pub fn finish(self) -> anyhow::Result<u64> {
        let mut peak = 0;
        for node in self.peers {
            peak = peak.max(node.usage()?.peak_rss_bytes);
            node.stop()?;
        }
        peak = peak.max(self.sluice.usage()?.peak_rss_bytes);
        self.sluice.stop()?;
        Ok(peak)
    }
}

pub fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1_000_000.0
}

/// Milliseconds from a histogram of microseconds.
pub fn ms(micros: u64) -> f64 {
    micros as f64 / 1000.0
}

/// "N of M" detail for a delivery audit.
pub fn audit_detail(audit: &crate::sink::Audit) -> String {
    format!("{}, {} unexpected", once_detail(audit), audit.unexpected)
}

/// [`audit_detail`] without the unexpected count, for audits of a subset.
pub fn once_detail(audit: &crate::sink::Audit) -> String {
    format!(
        "{} of {} exactly once; {} missing, {} duplicated, {} bad signatures",
        audit.exactly_once, audit.expected, audit.missing, audit.duplicated, audit.bad_signatures
    )
}
