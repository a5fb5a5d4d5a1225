//! What one load phase cost: CPU seconds per million events over every
//! node (and each node's share when there are several), and with
//! PostgreSQL what the database did (commits/s, rows written per commit,
//! how often a session waited on a lock). Ingest and end-to-end use it.

use std::time::Duration;

use crate::pg::{DbActivity, Watch};
use crate::report::Report;
use crate::scenarios::Harness;
use crate::scenarios::ingest::per_million;

/// Readings taken before a phase.
pub struct Meter {
    cpu: Vec<f64>,
    db: Option<Watch>,
}

impl Meter {
    pub async fn start(h: &Harness) -> anyhow::Result<Meter> {
        let db = match h.sluice.postgres_url() {
            Some(url) => Some(Watch::start(url).await?),
            None => None,
        };
        Ok(Meter {
            cpu: h.cpu_secs()?,
            db,
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
        let cpu: Vec<f64> = h
            .cpu_secs()?
            .iter()
            .zip(&self.cpu)
            .map(|(after, before)| after - before)
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
        if let Some(watch) = self.db {
            database(report, label, &watch.finish().await?, elapsed);
        }
        Ok(())
    }
}

fn database(report: &mut Report, label: &str, db: &DbActivity, elapsed: Duration) {
    let secs = elapsed.as_secs_f64().max(f64::EPSILON);
    report.figure(
        "postgres",
        format!("{label}: commits/s"),
        db.commits as f64 / secs,
        "1/s",
        None,
    );
    report.figure(
        "postgres",
        format!("{label}: rows written per commit"),
        db.rows_written as f64 / db.commits.max(1) as f64,
        "rows",
        None,
    );
    report.figure(
        "postgres",
        format!("{label}: samples with a session waiting on a lock"),
        100.0 * db.lock_wait_samples as f64 / db.samples.max(1) as f64,
        "%",
        None,
    );
    report.figure(
        "postgres",
        format!("{label}: most sessions waiting on a lock at once"),
        db.max_lock_waiters as f64,
        "sessions",
        None,
    );
}
