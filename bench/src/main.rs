//! `sluice-bench`: Sluice's benchmark suite.
//!
//! It starts the real release `sluice` binary as a child process (embedded
//! store, fresh temporary data dir per scenario), runs a signed-webhook sink
//! in this process, drives load over loopback from this process, and prints
//! one table. Build and run (see `BENCHMARKS.md`):
//!
//! ```text
//! cargo build --release -p sluice -p sluice-bench && target/release/sluice-bench
//! ```
//!
//! `--quick` is the CI smoke test: small, under a minute, and it asserts only
//! correctness (every accepted event delivered, none lost, exactly one 2xx per
//! message in the retry storm), never speed. Any run exits non-zero when a
//! correctness check fails; budget misses are reported, not fatal.
//!
//! `--backend postgres` runs every scenario against PostgreSQL instead
//! (the project's test server, `scripts/postgres-test-server.sh`, unless
//! `--postgres-url` names one), one fresh schema per scenario; `--nodes 2`
//! starts two Sluice processes on that schema and spreads the load over both.
//! `--backend kafka` runs the Kafka shape: PostgreSQL as above, and the
//! event log in a topic of the scenario's own on the project's test broker
//! (`scripts/kafka-test-server.sh`, unless `--kafka-bootstrap` names
//! brokers), with a `sluice` built with `--features kafka`; the local
//! brokers' CPU is reported beside Sluice's and the database's. Only ingest and end-to-end apply: the profile engine is off
//! in that shape.
//!
//! Modules: [`server`] (spawn and stop sluice, admin API), [`pg`]
//! (PostgreSQL: server, schemas, activity), [`sink`] (the
//! webhook receiver), [`load`] (events and the load generator),
//! [`scenarios`], [`resources`] (/proc readings), [`broker`] (local Kafka
//! brokers' CPU), [`report`] (table, JSON).

mod broker;
mod load;
mod pg;
mod report;
mod resources;
mod scenarios;
mod server;
mod sink;

use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;

use crate::report::Report;
use crate::scenarios::{Plan, Scenario};
use crate::server::Backend;

#[derive(Parser, Debug)]
#[command(name = "sluice-bench", version, about = "Sluice benchmark suite")]
struct Cli {
    /// Small smoke run (under a minute) that checks correctness only.
    #[arg(long)]
    quick: bool,
    /// Also write the results as JSON to this file.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// The sluice binary to benchmark. Default: `sluice` next to this
    /// executable, else `target/release/sluice`.
    #[arg(long, value_name = "PATH")]
    sluice: Option<PathBuf>,
    /// `storage.synchronous` for the server: `full` (the production default)
    /// or `normal`.
    #[arg(long, default_value = "full")]
    synchronous: String,
    /// Longest wait for deliveries after each load phase, in seconds
    /// (default: 20 quick, 40 full).
    #[arg(long, value_name = "SECS")]
    wait: Option<u64>,
    /// Keep each server's log in this directory (default: discarded).
    #[arg(long, value_name = "DIR")]
    log_dir: Option<PathBuf>,
    /// The storage backend: `sqlite` (the embedded default), `postgres`, or
    /// `kafka` (PostgreSQL with the event log in Kafka).
    #[arg(long, value_enum, default_value = "sqlite")]
    backend: BackendArg,
    /// With `--backend postgres`: the server to use. Default: start the
    /// project's test server (`scripts/postgres-test-server.sh start`).
    #[arg(long, value_name = "URL")]
    postgres_url: Option<String>,
    /// With `--backend kafka`: the brokers' bootstrap servers. Default:
    /// start the project's test broker (`scripts/kafka-test-server.sh
    /// start`).
    #[arg(long, value_name = "HOST:PORT")]
    kafka_bootstrap: Option<String>,
    /// Sluice processes per scenario, sharing one PostgreSQL schema.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=4))]
    nodes: u8,
    /// Run only these scenarios (repeatable). Default: all.
    #[arg(long = "only", value_enum)]
    only: Vec<Scenario>,
    /// Worker threads of the load generator's runtime. One drives every
    /// scenario here with the least taken from the cores the server shares
    /// (BENCHMARKS.md, "Measured choices").
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=8))]
    load_threads: u8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum BackendArg {
    Sqlite,
    Postgres,
    /// PostgreSQL for state, the event log in Kafka.
    Kafka,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let backend = match cli.backend {
        BackendArg::Sqlite if cli.nodes > 1 => {
            anyhow::bail!("--nodes above 1 needs --backend postgres (SQLite is single-node)")
        }
        BackendArg::Sqlite => Backend::Sqlite,
        BackendArg::Postgres | BackendArg::Kafka => Backend::Postgres {
            url: match cli.postgres_url {
                Some(url) => url,
                None => pg::start_test_server()?,
            },
            kafka: match (cli.backend, cli.kafka_bootstrap) {
                (BackendArg::Kafka, Some(bootstrap)) => Some(bootstrap),
                (BackendArg::Kafka, None) => Some(pg::start_kafka_test_broker()?),
                _ => None,
            },
        },
    };
    let sluice = resolve_sluice(cli.sluice)?;
    if !matches!(cli.synchronous.as_str(), "full" | "normal") {
        anyhow::bail!("--synchronous must be 'full' or 'normal'");
    }
    let mut plan = Plan::new(cli.quick, sluice, cli.synchronous, cli.log_dir, backend);
    plan.nodes = usize::from(cli.nodes);
    if let Some(secs) = cli.wait {
        plan.delivery_limit = std::time::Duration::from_secs(secs);
    }
    let scenarios = if cli.only.is_empty() {
        Scenario::ALL.to_vec()
    } else {
        cli.only
    };
    // The load generator's own runtime; the sink runs on a separate one.
    // Multi-threaded even with one worker: the PostgreSQL functions of `pg`
    // use `block_in_place`.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(usize::from(cli.load_threads))
        .enable_all()
        .build()
        .context("starting the load generator's runtime")?;
    let mut report = Report::new(&plan);
    runtime.block_on(scenarios::run_all(&plan, &scenarios, &mut report));
    print!("{}", report.table());
    if let Some(path) = &cli.json {
        std::fs::write(path, report.json()?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let (passed, failed) = report.check_counts();
    println!("{passed} passed, {failed} failed");
    if failed > 0 {
        std::process::exit(1);
    }
    Ok(())
}

/// The binary to benchmark: the flag, else the sibling of this executable
/// (both live in `target/release`), else `target/release/sluice`.
fn resolve_sluice(flag: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    let candidates: Vec<PathBuf> = match flag {
        Some(path) => vec![path],
        None => {
            let sibling = std::env::current_exe()
                .ok()
                .and_then(|exe| exe.parent().map(|dir| dir.join("sluice")));
            sibling
                .into_iter()
                .chain([PathBuf::from("target/release/sluice")])
                .collect()
        }
    };
    candidates
        .iter()
        .find(|p| p.is_file())
        .cloned()
        .with_context(|| {
            format!(
                "no sluice binary at {candidates:?}; build it first: \
                 cargo build --release -p sluice -p sluice-bench"
            )
        })
}
