//! Dashboard: every page renders in under 200 ms on the server
//! for a source with 1,000,000 stored events.
//!
//! One server, one source, a Webhooks destination to the sink (so the source
//! has 1,000,000 deliveries too), a destination filter, a block rule, a
//! computed trait, an audience and a regulation; then 1,000,000 events (50,000
//! users, 20 each) in batches of 100. The run signs in like a browser (the
//! double-submit sign-in form, then the session cookie) and times each page:
//! one warm-up request, then five; the figure is the median, the time from
//! sending the request to the last byte of the page over loopback. The
//! delivery backlog is drained first (at most 8 × the delivery limit); the
//! profile engine may still be catching up while the pages are read.
//!
//! A second, quiet source sends one call every 20 ms while the million are
//! stored, so its calls lie about one per 4,096-seq block: the worst case
//! for its debugger page, which finds a source's calls through per-block
//! source lists rather than an index (`sqlite/source_blocks.rs`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::json;

use crate::load::{Call, Workload, drive};
use crate::report::{Budget, Report};
use crate::scenarios::{CONNECTIONS, Harness, Plan};
use crate::server::{ADMIN_TOKEN, Sluice};
use crate::sink::Mode;

const STORED: usize = 1_000_000;
const SAMPLES: usize = 5;

pub async fn run(plan: &Plan, report: &mut Report) -> anyhow::Result<u64> {
    let h = Harness::start(plan, &plan.server).await?;
    let endpoint = h.sink.endpoint(Mode::Ok);
    let dest = h.webhook("sink", &[&endpoint]).await?;
    let sluice = &h.sluice;
    let post = reqwest::Method::POST;
    let put = reqwest::Method::PUT;
    sluice
        .admin(
            put.clone(),
            &format!("/destinations/{dest}/filters"),
            json!({"filters": [{"name": "no coupons", "action": "drop_fields", "fields": ["properties.coupon"]}]}),
        )
        .await?;
    sluice
        .admin(
            put,
            &format!("/sources/{}/rules", h.source.id),
            json!({"blocked_events": ["Debug Ping"]}),
        )
        .await?;
    sluice
        .admin(
            post.clone(),
            "/computed-traits",
            json!({"name": "Orders", "definition": {"kind": "counter", "event": "Order Completed"}}),
        )
        .await?;
    let audience = sluice
        .admin(
            post.clone(),
            "/audiences",
            json!({"name": "Loyal", "definition": {"condition": {"performed": {"event": "Order Completed", "count": {"at_least": 10}}}}}),
        )
        .await?;
    let audience = audience["id"].as_str().context("audience id")?.to_owned();
    let regulation = sluice
        .admin(
            post,
            "/regulations",
            json!({"regulationType": "SUPPRESS_ONLY", "subjectIds": ["nobody-1", "nobody-2"]}),
        )
        .await?;
    let regulation = regulation["id"]
        .as_str()
        .context("regulation id")?
        .to_owned();

    let stored = if plan.quick { 20_000 } else { STORED };
    let quiet = sluice.create_source("quiet").await?;
    let stop = Arc::new(AtomicBool::new(false));
    let trickle = tokio::spawn(trickle(
        sluice.addr,
        quiet.authorization.clone(),
        stop.clone(),
    ));
    let started = Instant::now();
    let target = h.target(
        CONNECTIONS,
        crate::load::Pace::Closed,
        Duration::from_secs(900),
    );
    let w = Arc::new(Workload::new(Call::Batch(100), "dash", stored));
    let out = drive(&target, w.clone()).await?;
    if out.failures > 0 || out.acked_events(&w) != stored {
        bail!("storing {stored} events: {} failures", out.failures);
    }
    stop.store(true, Ordering::Relaxed);
    let quiet_calls = trickle.await.context("quiet source task")??;
    eprintln!(
        "  stored {stored} events in {:.0} s, and {quiet_calls} of a quiet source among them",
        started.elapsed().as_secs_f64()
    );
    // Let the delivery backlog drain first (bounded), so that the figures are
    // page rendering rather than contention with a million webhook sends.
    let drain = Instant::now();
    while h.sink.ok_count(&endpoint) < stored as u64 && drain.elapsed() < plan.delivery_limit * 8 {
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    eprintln!(
        "  {} of {stored} delivered after {:.0} s more",
        h.sink.ok_count(&endpoint),
        drain.elapsed().as_secs_f64()
    );
    // A messageId from the middle of the log, for the delivery filter.
    let middle = w
        .ids_of(w.requests() / 2)
        .next()
        .context("workload without ids")?;

    let cookie = sign_in(sluice).await?;
    let src = &h.source.id;
    let pages = [
        "/".to_owned(),
        "/sources".to_owned(),
        format!("/sources/{src}"),
        format!("/sources/{src}/debugger"),
        format!("/sources/{src}/debugger?before={}", stored / 2),
        format!("/sources/{}/debugger", quiet.id),
        format!("/sources/{src}/schema"),
        format!("/sources/{src}/schema?kind=property&sort=volume_30d"),
        format!("/usage?source={src}"),
        "/destinations".to_owned(),
        format!("/destinations/{dest}"),
        format!("/destinations/{dest}/deliveries"),
        format!("/destinations/{dest}/deliveries?message_id={middle}"),
        format!("/destinations/{dest}/deliveries?state=dead"),
        format!("/destinations/{dest}/deliveries?state=filtered"),
        "/computed-traits".to_owned(),
        "/audiences".to_owned(),
        format!("/audiences/{audience}"),
        "/audiences/new".to_owned(),
        "/profiles?id=user-000042".to_owned(),
        "/regulations".to_owned(),
        format!("/regulations/{regulation}"),
        "/suppressions".to_owned(),
    ];
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()?;
    let mut worst = 0f64;
    let mut failed = Vec::new();
    for path in &pages {
        let url = format!("http://{}{path}", sluice.addr);
        let mut times = Vec::with_capacity(SAMPLES);
        for i in 0..=SAMPLES {
            let t = Instant::now();
            let resp = client.get(&url).header("cookie", &cookie).send().await?;
            let status = resp.status();
            let body = resp.bytes().await?;
            let ms = t.elapsed().as_secs_f64() * 1000.0;
            if status != 200 || body.len() < 200 {
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
            "dashboard",
            format!(
                "GET {} ({stored} events), median of {SAMPLES}",
                label(path, src, &dest).replace(&quiet.id, "{quiet source}")
            ),
            median,
            "ms",
            Some(Budget::AtMost(200.0)),
        );
    }
    report.figure(
        "dashboard",
        "slowest page, median (budget 200 ms)",
        worst,
        "ms",
        Some(Budget::AtMost(200.0)),
    );
    report.check(
        "dashboard: every page answers 200 to a signed-in browser",
        failed.is_empty(),
        if failed.is_empty() {
            format!("{} pages", pages.len())
        } else {
            failed.join("; ")
        },
    );
    h.finish()
}

/// Sends single track calls to a source every 20 ms until `stop`; returns
/// how many were answered 200.
async fn trickle(
    addr: std::net::SocketAddr,
    authorization: String,
    stop: Arc<AtomicBool>,
) -> anyhow::Result<u64> {
    let client = reqwest::Client::new();
    let url = format!("http://{addr}/v1/track");
    let mut ok = 0;
    while !stop.load(Ordering::Relaxed) {
        let body = json!({"userId": "quiet-user", "event": "Quiet Ping", "messageId": format!("quiet-{ok}")});
        let resp = client
            .post(&url)
            .header("authorization", &authorization)
            .json(&body)
            .send()
            .await?;
        ok += u64::from(resp.status() == 200);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(ok)
}

/// The path with ids replaced by their role, for the table.
fn label(path: &str, src: &str, dest: &str) -> String {
    path.replace(src, "{source}").replace(dest, "{destination}")
}

/// Signs in through the dashboard's form (the double-submit CSRF cookie is
/// ours to choose) and returns the `Cookie` header of the session.
pub(super) async fn sign_in(sluice: &Sluice) -> anyhow::Result<String> {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    let csrf = "bench-signin-csrf-0123456789";
    let resp = client
        .post(format!("http://{}/signin", sluice.addr))
        .header("cookie", format!("sluice_signin={csrf}"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("csrf={csrf}&next=%2F&token={ADMIN_TOKEN}"))
        .send()
        .await?;
    let session = resp
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("sluice_session=") && !v.starts_with("sluice_session=;"))
        .and_then(|v| v.split(';').next())
        .map(str::to_owned);
    session.with_context(|| format!("sign-in gave no session (HTTP {})", resp.status()))
}
