//! What one load phase cost: CPU seconds per million events over every
//! node (and each node's share when there are several), and with
//! PostgreSQL what the database did, per event of the phase (accepted, or
//! delivered end to end): its CPU, write-ahead log bytes and row writes
//! (by table and kind), plus commits/s, rows per commit and how often
//! sessions waited on a lock; in the Kafka shape also the local brokers'
//! CPU. Ingest, end-to-end and the profile engine's catch-up use it.

use std::time::Duration;

use crate::pg::{DbActivity, TableWrites, Watch};
use crate::report::{Budget, Report};
use crate::scenarios::Harness;
use crate::scenarios::ingest::per_million;

/// Readings taken before a phase.
pub struct Meter {
    cpu: Vec<f64>,
    db: Option<Watch>,
    /// The local Kafka brokers' CPU seconds, in the Kafka shape.
    broker: Option<f64>,
}

impl Meter {
    pub async fn start(h: &Harness) -> anyhow::Result<Meter> {
        let db = match (h.sluice.postgres_url(), h.sluice.schema()) {
            (Some(url), Some(schema)) => Some(Watch::start(url, schema).await?),
            _ => None,
        };
        Ok(Meter {
            cpu: h.cpu_secs()?,
            db,
            broker: h.sluice.kafka().then(crate::broker::cpu_secs).flatten(),
        })
    }

    /// Reports the phase `label` (a figure name's tail) that accepted
    /// `events` in `elapsed`.
    pub async fn finish(
        self,
        h: &Harness,
        report: &mut Report,
        label: &str,
        events: usize,
        elapsed: Duration,
    ) -> anyhow::Result<()> {
        // A node started during the phase counts from zero.
        let cpu: Vec<f64> = h
            .cpu_secs()?
            .iter()
            .enumerate()
            .map(|(i, after)| after - self.cpu.get(i).copied().unwrap_or(0.0))
            .collect();
        report.figure(
            "resources",
            format!("CPU seconds per million events, {label}"),
            per_million(cpu.iter().sum(), events),
            "s",
            None,
        );
        if cpu.len() > 1 {
            for (i, secs) in cpu.iter().enumerate() {
                report.figure(
                    "resources",
                    format!("CPU seconds per million events, {label}, node {}", i + 1),
                    per_million(*secs, events),
                    "s",
                    None,
                );
            }
        }
        if let (Some(before), Some(after)) = (self.broker, crate::broker::cpu_secs()) {
            report.figure(
                "kafka",
                format!("broker CPU seconds per million events, {label}"),
                per_million(after - before, events),
                "s",
                None,
            );
        }
        if let Some(watch) = self.db {
            database(report, label, &watch.finish().await?, events, elapsed);
        }
        Ok(())
    }
}

fn database(report: &mut Report, label: &str, db: &DbActivity, events: usize, elapsed: Duration) {
    let secs = elapsed.as_secs_f64().max(f64::EPSILON);
    let per_event = |n: f64| n / events.max(1) as f64;
    let mut figure = |metric: String, value: f64, unit: &'static str, budget: Option<Budget>| {
        report.figure("postgres", metric, value, unit, budget);
    };
    match db.cpu_secs {
        Some(cpu) => figure(
            format!("{label}: database CPU seconds per million events"),
            per_million(cpu, events),
            "s",
            None,
        ),
        None => eprintln!("  (database CPU not reported: the server is not a local process)"),
    }
    figure(
        format!("{label}: WAL bytes per event"),
        per_event(db.wal_bytes as f64),
        "bytes",
        None,
    );
    let schema_rows: i64 = db.tables.values().map(TableWrites::total).sum();
    figure(
        format!("{label}: row writes per event"),
        per_event(schema_rows as f64),
        "rows",
        None,
    );
    // Tables written less than once per 100 events (configuration, the
    // nodes' heartbeats) are summed into one line.
    let (mut minor, mut minor_tables) = (0, 0);
    for (table, w) in &db.tables {
        if per_event(w.total() as f64) < 0.01 {
            minor += w.total();
            minor_tables += 1;
            continue;
        }
        for (kind, n) in [
            ("inserted", w.inserted),
            ("updated", w.updated),
            ("deleted", w.deleted),
        ] {
            if per_event(n as f64) >= 0.005 {
                figure(
                    format!("{label}: {table} rows {kind} per event"),
                    per_event(n as f64),
                    "rows",
                    None,
                );
            }
        }
        if per_event(w.updated as f64) >= 0.005 {
            figure(
                format!("{label}: {table} rows updated heap-only (HOT)"),
                per_event(w.hot_updated as f64),
                "rows",
                None,
            );
        }
    }
    if minor > 0 {
        figure(
            format!("{label}: {minor_tables} other tables, rows per event"),
            per_event(minor as f64),
            "rows",
            None,
        );
    }
    figure(
        format!("{label}: commits/s"),
        db.commits as f64 / secs,
        "1/s",
        None,
    );
    figure(
        format!("{label}: rows written per commit"),
        db.rows_written as f64 / db.commits.max(1) as f64,
        "rows",
        None,
    );
    let locks = &db.locks;
    figure(
        format!("{label}: active sessions waiting on a lock"),
        100.0 * locks.waiting as f64 / locks.active.max(1) as f64,
        "%",
        Some(Budget::AtMost(2.0)),
    );
    figure(
        format!("{label}: samples with a session waiting on a lock"),
        100.0 * locks.samples_waiting as f64 / locks.samples.max(1) as f64,
        "%",
        None,
    );
    figure(
        format!("{label}: most sessions waiting on a lock at once"),
        locks.max_waiting as f64,
        "sessions",
        None,
    );
    let mut waits: Vec<(&String, &u64)> = locks.statements.iter().collect();
    waits.sort_by(|a, b| b.1.cmp(a.1));
    for (statement, n) in waits.iter().take(3) {
        eprintln!("  {label}: waited on a lock {n} times: {statement}");
    }
}
