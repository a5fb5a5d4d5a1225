//! Scenario: delivery health (`--only health`, not in the default run).
//!
//! 1. **The overview's read time.** A template store holds 10 destinations
//!    and their health aggregates for 10,000,000 delivered events over the
//!    last 7 days (every five-minute bucket of every destination, written by
//!    two node shards, so reads sum them), seeded through the store's own
//!    merge (`HealthStore::add_health`) rather than delivered. A server on
//!    a copy of it; the bench signs in and times `/delivery-health` for each
//!    window and the admin API's `/api/v1/delivery-health`: one warm-up
//!    request, then five; the figure is the median. Budget: 100 ms.
//! 2. **Ingest with the aggregates on against off**, same run: two fresh
//!    servers per round, `SLUICE_DELIVERY__HEALTH=false` and the default,
//!    each with a Webhooks destination to the sink that every event reaches
//!    (so the engine counts every outcome while ingest runs) and a filter
//!    dropping one event in ten (so ingest counts filtered calls); batches
//!    of 100 over 64 connections. Interleaved off, on, on, off; the best
//!    round of each arm counts. Budget: on ≥ 0.97 × off.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::json;
use sluice_store::health::{BUCKET_MS, Health, HealthDelta, HealthStore, bucket_start};
use sluice_store::{CatalogStore, NewDestination, NewSource, WebhookSettings};

use crate::load::{Call, Pace, Workload, drive};
use crate::report::{Budget, Report};
use crate::scenarios::dashboard::sign_in;
use crate::scenarios::ingest::acknowledged;
use crate::scenarios::{CONNECTIONS, Harness, Plan};
use crate::server::ADMIN_TOKEN;
use crate::sink::Mode;

const DESTINATIONS: usize = 10;
const BUCKETS: i64 = 7 * 24 * 12;
const SAMPLES: usize = 5;

pub async fn run(plan: &Plan, report: &mut Report) -> anyhow::Result<u64> {
    let events: u64 = if plan.quick { 100_000 } else { 10_000_000 };
    let dir = tempfile::Builder::new()
        .prefix("sluice-bench-health-")
        .tempdir()?;
    let template = dir.path().join("template.db");
    let started = Instant::now();
    write_template(&template, events).await?;
    eprintln!(
        "  template: {DESTINATIONS} destinations, aggregates of {events} events in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let mut peak = read_times(plan, report, &template, events).await?;
    peak = peak.max(ingest(plan, report).await?);
    Ok(peak)
}

/// A store with `DESTINATIONS` destinations and the aggregates of `events`
/// events spread evenly over the last week's buckets.
async fn write_template(path: &Path, events: u64) -> anyhow::Result<()> {
    let mut config = sluice_store::SqliteConfig::new(PathBuf::from(path));
    config.synchronous = sluice_store::Synchronous::Normal;
    let store = sluice_store::SqliteStore::open(config).await?;
    let key = sluice_store::keys::new_write_key();
    let source = store
        .create_source(NewSource {
            id: "src_health".into(),
            name: "preloaded".into(),
            enabled: true,
            write_key_hash: sluice_store::keys::hash_secret(&key),
            write_key_hint: key.chars().take(4).collect(),
        })
        .await?;
    let now = bucket_start(chrono::Utc::now().timestamp_millis());
    let per_bucket = events / (DESTINATIONS as u64 * BUCKETS as u64);
    for d in 0..DESTINATIONS {
        let id = format!("dst_health_{d:02}");
        store
            .create_destination(NewDestination {
                id: id.clone(),
                name: format!("Receiver {d}"),
                kind: "webhooks".into(),
                enabled: d % 4 != 3,
                settings: WebhookSettings::default(),
                source_ids: vec![source.id.clone()],
            })
            .await?;
        for shard in 0..2 {
            let deltas: Vec<HealthDelta> = (0..BUCKETS)
                .map(|b| HealthDelta {
                    destination_id: id.clone(),
                    bucket_start: now - b * BUCKET_MS,
                    health: health(per_bucket / 2, b as u64 + d as u64),
                })
                .collect();
            store.add_health(shard, deltas).await?;
        }
    }
    store.close().await;
    Ok(())
}

/// One shard's counts of one bucket: mostly delivered, some retried, dead,
/// filtered and discarded, latencies spread over a few dozen milliseconds
/// with a slow tail.
fn health(delivered: u64, seed: u64) -> Health {
    let mut h = Health::default();
    let c = &mut h.counts;
    c.delivered = delivered;
    c.retrying = delivered / 20 + seed % 3;
    c.dead = delivered / 100;
    c.filtered = delivered / 50;
    c.discarded = seed % 2;
    for i in 0..delivered + c.retrying {
        let ms = 5 + (i * 7 + seed) % 60 + if i % 40 == 0 { 900 } else { 0 };
        h.latency.record(ms);
    }
    h
}

/// Times the overview's pages and the API on a server over the template.
async fn read_times(
    plan: &Plan,
    report: &mut Report,
    template: &Path,
    events: u64,
) -> anyhow::Result<u64> {
    let mut options = plan.server.clone();
    options.seed = Some(template.to_owned());
    let h = Harness::start(plan, &options).await?;
    let cookie = sign_in(&h.sluice).await?;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()?;
    let mut failed = Vec::new();
    let mut worst = 0f64;
    for (path, api) in [
        ("/delivery-health?window=1h", false),
        ("/delivery-health?window=24h", false),
        ("/delivery-health?window=7d", false),
        ("/api/v1/delivery-health?window=7d", true),
    ] {
        let url = format!("http://{}{path}", h.sluice.addr);
        let mut times = Vec::new();
        for i in 0..=SAMPLES {
            let req = client.get(&url);
            let req = if api {
                req.bearer_auth(ADMIN_TOKEN)
            } else {
                req.header("cookie", &cookie)
            };
            let t = Instant::now();
            let resp = req.send().await?;
            let status = resp.status();
            let body = resp.text().await?;
            let ms = t.elapsed().as_secs_f64() * 1000.0;
            if status != 200 || !body.contains("Receiver 9") {
                failed.push(format!("{path}: HTTP {status}"));
                break;
            }
            if i > 0 {
                times.push(ms);
            }
        }
        if times.is_empty() {
            continue;
        }
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        worst = worst.max(median);
        report.figure(
            "health",
            format!(
                "GET {path} ({DESTINATIONS} destinations, {events} events), median of {SAMPLES}"
            ),
            median,
            "ms",
            Some(Budget::AtMost(100.0)),
        );
    }
    report.check(
        "health: the overview answers 200 with every destination",
        failed.is_empty(),
        if failed.is_empty() {
            format!("slowest median {worst:.1} ms")
        } else {
            failed.join("; ")
        },
    );
    h.finish()
}

/// Batch ingest with delivery health on against off.
async fn ingest(plan: &Plan, report: &mut Report) -> anyhow::Result<u64> {
    let rounds = if plan.quick { 1 } else { 2 };
    let mut best = [0f64; 2];
    let mut peak = 0;
    for round in 0..rounds {
        let order = if round % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        for on in order {
            let (rate, p) = ingest_arm(plan, report, on, round).await?;
            eprintln!(
                "  round {round}: health {}: {rate:.0} ev/s",
                if on { "on" } else { "off" }
            );
            best[usize::from(on)] = best[usize::from(on)].max(rate);
            peak = peak.max(p);
        }
    }
    report.figure(
        "health",
        "ingest, health off: batch events/s",
        best[0],
        "ev/s",
        None,
    );
    report.figure(
        "health",
        "ingest, health on: batch events/s",
        best[1],
        "ev/s",
        None,
    );
    report.figure(
        "health",
        "ratio ingest: health on / off",
        best[1] / best[0].max(1.0),
        "x",
        Some(Budget::AtLeast(0.97)),
    );
    Ok(peak)
}

async fn ingest_arm(
    plan: &Plan,
    report: &mut Report,
    on: bool,
    round: usize,
) -> anyhow::Result<(f64, u64)> {
    let mut options = plan.server.clone();
    if !on {
        options
            .env
            .push(("SLUICE_DELIVERY__HEALTH".into(), "false".into()));
    }
    let h = Harness::start(plan, &options).await?;
    let endpoint = h.sink.endpoint(Mode::Ok);
    let dest = h.webhook("sink", &[&endpoint]).await?;
    h.sluice
        .admin(
            reqwest::Method::PUT,
            &format!("/destinations/{dest}/filters"),
            json!({"filters": [{"name": "one in ten", "action": "drop",
                "when": {"field": "userId", "op": "in", "values": ["user-000000"]}}]}),
        )
        .await
        .context("filter")?;
    let target = h.target(CONNECTIONS, Pace::Closed, plan.load_limit);
    let events = plan.batch_events / 2;
    // Ten people: the filter drops one event in ten.
    let w = Arc::new(Workload::people(
        Call::Batch(100),
        &format!("h{round}{}", u8::from(on)),
        events,
        10,
    ));
    let out = drive(&target, w.clone()).await?;
    let label = format!("health {} batch", if on { "on" } else { "off" });
    acknowledged(report, &label, &out, &w);
    let rate = out.acked_events(&w) as f64 / out.elapsed.as_secs_f64();
    Ok((rate, h.finish()?))
}
