//! Scenario: the cost of deduplication by (source, messageId) at ingest,
//! with the window full.
//!
//! A template database is written once with `ids` stored events (default
//! 10,000,000; 100,000 with `--quick`) received evenly over the last 23
//! hours, so every one of their message ids is inside the 24-hour window
//! and every generation of it holds some, as in steady traffic. Each arm is
//! a fresh server on a copy of it, so both ingest into the same store:
//! - **off**: `SLUICE_STORAGE__DEDUP_WINDOW_SECS=0`;
//! - **on**: the default window, rebuilt from the template at start.
//!
//! Both are driven with the ingest workloads (batches of 100 and single
//! calls, 64 connections, all ids new), interleaved over five rounds; the
//! best round of each arm counts. Also reported: the time from spawn to
//! ready of each arm (the "on" arm's rebuilds the window) and the resident
//! memory after start, whose difference is the window's, and the time the
//! store takes to open with the window rebuilt from the events and loaded
//! from the file a clean stop saves.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use rusqlite::params;

use crate::load::{Call, Pace, Workload, drive};
use crate::report::{Budget, Report};
use crate::scenarios::ingest::acknowledged;
use crate::scenarios::{CONNECTIONS, Harness, Plan, mb};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Arm {
    Off,
    On,
}

impl Arm {
    fn label(self) -> &'static str {
        match self {
            Arm::Off => "dedup off",
            Arm::On => "dedup on",
        }
    }
}

#[derive(Clone, Copy)]
struct Figures {
    batch: f64,
    track: f64,
    /// Server CPU seconds per million events stored, per phase: steadier
    /// than the rates when other work shares the machine.
    batch_cpu: f64,
    track_cpu: f64,
    ready_secs: f64,
    rss: u64,
    peak: u64,
}

pub async fn run(plan: &Plan, report: &mut Report) -> anyhow::Result<u64> {
    let ids = if plan.quick { 100_000 } else { 10_000_000 };
    let dir = tempfile::Builder::new()
        .prefix("sluice-bench-dedup-")
        .tempdir()?;
    let template = dir.path().join("template.db");
    let started = Instant::now();
    write_template(&template, ids).await?;
    eprintln!(
        "  template: {ids} events in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let (rebuilt, loaded) = open_times(&template).await?;
    eprintln!(
        "  store open: window rebuilt in {rebuilt:.2} s, loaded from its saved file in {loaded:.2} s"
    );
    report.figure(
        "dedup",
        "store open, window rebuilt from the events",
        rebuilt,
        "s",
        None,
    );
    report.figure(
        "dedup",
        "store open, window loaded from the saved file",
        loaded,
        "s",
        None,
    );
    let rounds = if plan.quick { 1 } else { 5 };
    let mut best: [Option<Figures>; 2] = [None, None];
    let mut peak = 0;
    for round in 0..rounds {
        for (i, arm) in [Arm::Off, Arm::On].into_iter().enumerate() {
            let f = one(plan, report, arm, &template, round).await?;
            eprintln!(
                "  round {round}: {}: batch {:.0} ev/s ({:.2} CPU s per M), track {:.0} ev/s ({:.2}), ready in {:.1} s, RSS {:.0} MB",
                arm.label(),
                f.batch,
                f.batch_cpu,
                f.track,
                f.track_cpu,
                f.ready_secs,
                mb(f.rss)
            );
            peak = peak.max(f.peak);
            let keep = best[i].take().map_or(f, |b| Figures {
                batch: b.batch.max(f.batch),
                track: b.track.max(f.track),
                batch_cpu: b.batch_cpu.min(f.batch_cpu),
                track_cpu: b.track_cpu.min(f.track_cpu),
                ready_secs: b.ready_secs.min(f.ready_secs),
                rss: b.rss.min(f.rss),
                peak: b.peak.max(f.peak),
            });
            best[i] = Some(keep);
        }
    }
    let [Some(off), Some(on)] = best else {
        anyhow::bail!("an arm did not run");
    };
    for (arm, f) in [(Arm::Off, &off), (Arm::On, &on)] {
        let l = arm.label();
        report.figure(
            "dedup",
            format!("{l}: batch events/s"),
            f.batch,
            "ev/s",
            None,
        );
        report.figure(
            "dedup",
            format!("{l}: track events/s"),
            f.track,
            "ev/s",
            None,
        );
        report.figure(
            "dedup",
            format!("{l}: CPU seconds per million events, batch"),
            f.batch_cpu,
            "s",
            None,
        );
        report.figure(
            "dedup",
            format!("{l}: CPU seconds per million events, track"),
            f.track_cpu,
            "s",
            None,
        );
        report.figure(
            "dedup",
            format!("{l}: start to ready"),
            f.ready_secs,
            "s",
            None,
        );
        report.figure(
            "dedup",
            format!("{l}: RSS after start"),
            mb(f.rss),
            "MB",
            None,
        );
    }
    let at_least = Some(Budget::AtLeast(0.95));
    let ratio = |on: f64, off: f64| on / off.max(1.0);
    report.figure(
        "dedup",
        "ratio batch: on / off",
        ratio(on.batch, off.batch),
        "x",
        at_least,
    );
    report.figure(
        "dedup",
        "ratio track: on / off",
        ratio(on.track, off.track),
        "x",
        at_least,
    );
    report.figure(
        "dedup",
        "CPU per event, batch: on / off",
        on.batch_cpu / off.batch_cpu.max(1e-9),
        "x",
        None,
    );
    report.figure(
        "dedup",
        "CPU per event, track: on / off",
        on.track_cpu / off.track_cpu.max(1e-9),
        "x",
        None,
    );
    let window = on.rss.saturating_sub(off.rss);
    report.figure(
        "dedup",
        format!("window memory for {ids} ids (RSS on - off)"),
        mb(window),
        "MB",
        None,
    );
    report.figure(
        "dedup",
        "window memory per id (RSS on - off)",
        window as f64 / ids as f64,
        "B",
        None,
    );
    Ok(peak)
}

async fn one(
    plan: &Plan,
    report: &mut Report,
    arm: Arm,
    template: &Path,
    round: usize,
) -> anyhow::Result<Figures> {
    let mut options = plan.server.clone();
    options.seed = Some(template.to_owned());
    if arm == Arm::Off {
        options
            .env
            .push(("SLUICE_STORAGE__DEDUP_WINDOW_SECS".into(), "0".into()));
    }
    let started = Instant::now();
    let h = Harness::start(plan, &options).await?;
    let ready_secs = started.elapsed().as_secs_f64();
    let pid = h.sluice.pid();
    let rss = resident(pid)?;
    let cpu = || crate::resources::usage(pid).map(|u| u.cpu_secs);
    let per_million = |secs: f64, events: usize| secs * 1e6 / events.max(1) as f64;
    let target = h.target(CONNECTIONS, Pace::Closed, plan.load_limit);
    let prefix = format!("d{round}{}", arm as u8);
    let batch = Arc::new(Workload::new(
        Call::Batch(100),
        &format!("{prefix}b"),
        plan.batch_events / 2,
    ));
    let before = cpu()?;
    let out = drive(&target, batch.clone()).await?;
    let batch_cpu = per_million(cpu()? - before, out.acked_events(&batch));
    acknowledged(
        report,
        &format!("dedup {} batch", arm.label()),
        &out,
        &batch,
    );
    let batch_rate = out.acked_events(&batch) as f64 / out.elapsed.as_secs_f64();
    let track = Arc::new(Workload::new(
        Call::Track,
        &format!("{prefix}t"),
        plan.track_events / 2,
    ));
    let before = cpu()?;
    let out = drive(&target, track.clone()).await?;
    let track_cpu = per_million(cpu()? - before, out.acked_events(&track));
    acknowledged(
        report,
        &format!("dedup {} track", arm.label()),
        &out,
        &track,
    );
    let track_rate = out.acked_events(&track) as f64 / out.elapsed.as_secs_f64();
    let peak = h.finish()?;
    Ok(Figures {
        batch: batch_rate,
        track: track_rate,
        batch_cpu,
        track_cpu,
        ready_secs,
        rss,
        peak,
    })
}

/// How long before now the template's oldest event was received: the
/// window (24 hours) less an hour, so no event expires during the run.
const SPREAD_MS: i64 = 23 * 3_600_000;

/// A store with `ids` events of one source, received evenly over the last
/// 23 hours, in seq order.
async fn write_template(path: &Path, ids: usize) -> anyhow::Result<()> {
    let mut config = sluice_store::SqliteConfig::new(PathBuf::from(path));
    config.dedup_window = None;
    config.synchronous = sluice_store::Synchronous::Normal;
    let store = sluice_store::SqliteStore::open(config.clone()).await?;
    store.close().await;
    drop(store);
    let path = path.to_owned();
    tokio::task::spawn_blocking(move || -> anyhow::Result<()> {
        let mut conn = rusqlite::Connection::open(&path)?;
        conn.execute_batch("PRAGMA synchronous = OFF;")?;
        let now = chrono::Utc::now().timestamp_millis();
        let tx = conn.transaction()?;
        {
            let mut insert = tx.prepare(
                "INSERT INTO events (source_id, message_id, event_type, received_at, body)
                 VALUES ('src_preloaded', ?1, 'track', ?2, '{}')",
            )?;
            for i in 0..ids {
                let id = format!("{:08x}-7d3c-4b1a-9e2f-{:012x}", i, i.wrapping_mul(7919));
                let ago = SPREAD_MS / ids as i64 * (ids - i) as i64;
                insert.execute(params![id, now - ago])?;
            }
        }
        tx.commit()?;
        conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")?;
        Ok(())
    })
    .await??;
    // Opening once more writes the message-id filters of the new events,
    // so that the arms' starts differ by the window's rebuild alone.
    let store = sluice_store::SqliteStore::open(config).await?;
    store.close().await;
    Ok(())
}

/// How long opening the template takes with the window on: first rebuilt
/// from the events (as after a `kill -9`), then loaded from the file the
/// clean close saved. The file goes after, so the arms start as the first.
async fn open_times(template: &Path) -> anyhow::Result<(f64, f64)> {
    let config = sluice_store::SqliteConfig::new(template.to_owned());
    let mut secs = [0.0; 2];
    for s in &mut secs {
        let started = Instant::now();
        let store = sluice_store::SqliteStore::open(config.clone()).await?;
        *s = started.elapsed().as_secs_f64();
        store.close().await;
    }
    let mut saved = template.as_os_str().to_owned();
    saved.push("-dedup");
    std::fs::remove_file(saved)?;
    Ok((secs[0], secs[1]))
}

/// `VmRSS` of a process, in bytes.
fn resident(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or(0);
    Ok(kb * 1024)
}
