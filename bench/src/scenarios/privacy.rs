//! Privacy: what suppression costs ingest and how long a purge
//! takes.
//!
//! - Suppression overhead: two servers side by side, one with 1,000,000
//!   suppressed ids loaded (200 `SUPPRESS_ONLY` regulations of 5,000), one
//!   with none; after one unmeasured round on each, batch ingest rounds
//!   alternate A, B, B, A, A, B and the ratio compares the means. None of
//!   the loaded ids sends traffic, so every event pays the lookup and none
//!   is dropped. Memory: the set's own heap bytes as the server reports
//!   them (`GET /api/v1/suppressions`, `thisNode`), and the resident set's
//!   growth while loading.
//! - Purge: 1,000,000 events stored (20 per user, 50,000 users), then a
//!   `DELETE_ONLY` of 5,000 of those users; time from the request to
//!   `FINISHED`, with secure delete (the default: freed space zeroed, and
//!   the page scrub at the end) and without (`storage.secure_delete =
//!   false`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::load::{Call, Workload, drive};
use crate::report::{Budget, Report};
use crate::scenarios::{CONNECTIONS, Harness, Plan, mb};
use crate::server::Sluice;

const SUPPRESSED: usize = 1_000_000;
const PER_REGULATION: usize = 5_000;

pub async fn run(plan: &Plan, report: &mut Report) -> anyhow::Result<u64> {
    let peak = suppression(plan, report).await?;
    Ok(peak.max(purge(plan, report).await?))
}

fn rss_bytes(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.split_whitespace().next())
                .and_then(|v| v.parse::<u64>().ok())
        })
        .map_or(0, |kib| kib * 1024)
}

async fn regulate(sluice: &Sluice, kind: &str, ids: Vec<String>) -> anyhow::Result<String> {
    let body = json!({"regulationType": kind, "subjectType": "USER_ID", "subjectIds": ids});
    let created = sluice
        .admin(reqwest::Method::POST, "/regulations", body)
        .await?;
    created["id"]
        .as_str()
        .map(str::to_owned)
        .context("regulation without id")
}

async fn suppression(plan: &Plan, report: &mut Report) -> anyhow::Result<u64> {
    let plain = Harness::start(plan, &plan.server).await?;
    let loaded = Harness::start(plan, &plan.server).await?;
    let pid = loaded.sluice.pid();
    let before = rss_bytes(pid);
    let started = Instant::now();
    let count = if plan.quick { 20_000 } else { SUPPRESSED };
    for chunk in 0..count / PER_REGULATION {
        let ids = (0..PER_REGULATION)
            .map(|i| format!("suppressed-{:07}", chunk * PER_REGULATION + i))
            .collect();
        regulate(&loaded.sluice, "SUPPRESS_ONLY", ids).await?;
    }
    let load_secs = started.elapsed().as_secs_f64();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after = rss_bytes(pid);
    let listed = loaded
        .sluice
        .admin(reqwest::Method::GET, "/suppressions?limit=1", Value::Null)
        .await?;
    let held = listed["thisNode"]["ids"].as_u64().unwrap_or(0);
    report.check(
        "privacy: every suppressed id is in the loaded server's set",
        held as usize == count,
        format!("{held} ids held"),
    );
    report.figure(
        "privacy",
        format!("in-memory set of {count} suppressed ids (heap bytes it reports)"),
        mb(listed["thisNode"]["memoryBytes"].as_u64().unwrap_or(0)),
        "MB",
        None,
    );
    report.figure(
        "privacy",
        format!("RSS growth while loading {count} suppressed ids (set, page cache, allocator)"),
        mb(after.saturating_sub(before)),
        "MB",
        None,
    );
    report.figure(
        "privacy",
        format!("time to load {count} suppressed ids (requests of 5,000)"),
        load_secs,
        "s",
        None,
    );
    // One unmeasured round each first: the loaded server may still be
    // checkpointing the 2,000,000 rows the loading wrote.
    let events = plan.batch_events / 2;
    let round = |h: &Harness, tag: String, n: usize| {
        let target = h.target(CONNECTIONS, crate::load::Pace::Closed, plan.load_limit);
        let w = Arc::new(Workload::new(Call::Batch(100), &tag, n));
        async move {
            let out = drive(&target, w.clone()).await?;
            if out.failures > 0 {
                bail!("ingest failures: {:?}", out.first_failure);
            }
            anyhow::Ok(out.acked_events(&w) as f64 / out.elapsed.as_secs_f64())
        }
    };
    round(&plain, "supwa".into(), events / 4).await?;
    round(&loaded, "supwb".into(), events / 4).await?;
    // A, B, B, A, A, B: each server runs first as often as second, so drift
    // in the machine's load cancels out of the ratio.
    let (mut plain_rate, mut loaded_rate) = (Vec::new(), Vec::new());
    for (i, loaded_turn) in [false, true, true, false, false, true]
        .into_iter()
        .enumerate()
    {
        let (h, rates) = if loaded_turn {
            (&loaded, &mut loaded_rate)
        } else {
            (&plain, &mut plain_rate)
        };
        rates.push(round(h, format!("sup{i}"), events).await?);
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    report.figure(
        "privacy",
        "ingest batch events/s, no suppressed ids",
        mean(&plain_rate),
        "ev/s",
        None,
    );
    report.figure(
        "privacy",
        format!("ingest batch events/s, {count} suppressed ids"),
        mean(&loaded_rate),
        "ev/s",
        None,
    );
    report.figure(
        "privacy",
        "ingest with suppressed ids / without (interleaved)",
        mean(&loaded_rate) / mean(&plain_rate).max(1.0),
        "ratio",
        Some(Budget::AtLeast(0.95)),
    );
    let peak = plain.finish()?;
    Ok(peak.max(loaded.finish()?))
}

/// The purge with secure delete (the default) and without it
/// (`storage.secure_delete = false`), each on a fresh server, interleaved
/// over two rounds (one with `--quick`); the fastest of each arm counts.
async fn purge(plan: &Plan, report: &mut Report) -> anyhow::Result<u64> {
    let stored = if plan.quick { 50_000 } else { 1_000_000 };
    let users = if plan.quick { 500 } else { 5_000 };
    let rounds = if plan.quick { 1 } else { 2 };
    let mut best = [f64::MAX; 2];
    let mut peak = 0;
    for round in 0..rounds {
        for (arm, secure) in [true, false].into_iter().enumerate() {
            let (secs, p) = purge_once(plan, report, secure, stored, users).await?;
            eprintln!(
                "  round {round}: purge, secure delete {}: {secs:.1} s",
                if secure { "on" } else { "off" }
            );
            best[arm] = best[arm].min(secs);
            peak = peak.max(p);
        }
    }
    let what =
        format!("DELETE_ONLY of {users} users among {stored} stored events: time to FINISHED");
    report.figure(
        "privacy",
        format!("{what}, secure delete"),
        best[0],
        "s",
        None,
    );
    report.figure("privacy", format!("{what}, without"), best[1], "s", None);
    report.figure(
        "privacy",
        "purge time, secure delete / without",
        best[0] / best[1].max(0.001),
        "x",
        Some(Budget::AtMost(1.5)),
    );
    Ok(peak)
}

async fn purge_once(
    plan: &Plan,
    report: &mut Report,
    secure: bool,
    stored: usize,
    users: usize,
) -> anyhow::Result<(f64, u64)> {
    let mut options = plan.server.clone();
    if !secure {
        options
            .env
            .push(("SLUICE_STORAGE__SECURE_DELETE".into(), "false".into()));
    }
    let h = Harness::start(plan, &options).await?;
    let target = h.target(CONNECTIONS, crate::load::Pace::Closed, plan.load_limit * 3);
    let w = Arc::new(Workload::new(Call::Batch(100), "purge", stored));
    let out = drive(&target, w.clone()).await?;
    if out.failures > 0 || out.acked_events(&w) != stored {
        bail!("storing {stored} events: {} failures", out.failures);
    }
    let ids = (0..users).map(|u| format!("user-{u:06}")).collect();
    let started = Instant::now();
    let id = regulate(&h.sluice, "DELETE_ONLY", ids).await?;
    let limit = Duration::from_secs(600);
    let detail: Value = loop {
        let d = h
            .sluice
            .admin(
                reqwest::Method::GET,
                &format!("/regulations/{id}"),
                Value::Null,
            )
            .await?;
        if d["status"] == json!("FINISHED") {
            break d;
        }
        if started.elapsed() > limit {
            bail!("regulation not finished within {limit:?}: {}", d["status"]);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let secs = started.elapsed().as_secs_f64();
    let purged: u64 = detail["subjectDetails"]
        .as_array()
        .map(|s| s.iter().filter_map(|d| d["eventsPurged"].as_u64()).sum())
        .unwrap_or(0);
    report.check(
        format!(
            "privacy: the purge removed every event of the users (secure delete {})",
            if secure { "on" } else { "off" }
        ),
        purged as usize == stored / 50_000 * users,
        format!("{purged} events purged"),
    );
    Ok((secs, h.finish()?))
}
