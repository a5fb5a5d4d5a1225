//! Whole-population work on a server holding every person's profile: the
//! backfill of a new computed trait, an audience's first sync (every member
//! once, signed) and the expiry of its window for every member at once.

use std::time::{Duration, Instant};

use anyhow::Context;
use reqwest::Method;
use serde_json::{Value, json};

use super::Sizes;
use crate::report::{Budget, Report};
use crate::scenarios::{Harness, SECRET, once_detail};
use crate::sink::Endpoint;

/// One marker person per engine partition: with several partitions
/// (PostgreSQL), each reads its own people in its own order, so one
/// marker shows only its own partition has caught up.
fn markers() -> Vec<String> {
    let partitions = sluice_store::POSTGRES_PARTITIONS;
    let mut by_partition: Vec<Option<String>> = vec![None; usize::from(partitions)];
    for i in 0.. {
        let user = format!("bench-marker-{i}");
        let p = sluice_store::person_slot(Some(&user), None) % partitions;
        by_partition[usize::from(p)].get_or_insert(user);
        if by_partition.iter().all(Option::is_some) {
            break;
        }
    }
    by_partition.into_iter().flatten().collect()
}

/// Sends marker calls and waits until the engine has made their profiles:
/// every event committed before them is then computed (commit order, in
/// each partition). Returns the wait, or `None` past `limit`.
pub async fn caught_up(h: &Harness, limit: Duration) -> anyhow::Result<Option<Duration>> {
    let started = Instant::now();
    let markers = markers();
    let batch: Vec<Value> = markers
        .iter()
        .map(|user| json!({"type": "track", "userId": user, "event": "Bench Marker"}))
        .collect();
    h.sluice
        .http
        .post(format!("http://{}/v1/batch", h.sluice.addr))
        .header("authorization", &h.source.authorization)
        .body(json!({ "batch": batch }).to_string())
        .send()
        .await?
        .error_for_status()?;
    let mut waiting = markers;
    while started.elapsed() < limit {
        let mut left = Vec::new();
        for user in waiting {
            let url = format!("/profiles/{user}");
            if h.sluice
                .admin(Method::GET, &url, Value::Null)
                .await
                .is_err()
            {
                left.push(user);
            }
        }
        if left.is_empty() {
            return Ok(Some(started.elapsed()));
        }
        waiting = left;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(None)
}

/// Creates a computed trait (not connected) and times it until every person
/// has a value.
pub async fn backfill(h: &Harness, sizes: &Sizes, report: &mut Report) -> anyhow::Result<()> {
    let started = Instant::now();
    let body = json!({"name": "backfill count",
                      "definition": {"kind": "counter", "event": "Order Completed"}});
    let created = h
        .sluice
        .admin(Method::POST, "/computed-traits", body)
        .await?;
    let id = created["id"].as_str().context("trait id")?.to_owned();
    let want = sizes.people as u64;
    let mut have = 0;
    while started.elapsed() < sizes.wait {
        let got = h
            .sluice
            .admin(Method::GET, &format!("/computed-traits/{id}"), Value::Null)
            .await?;
        have = got["status"]["people_with_value"].as_u64().unwrap_or(0);
        if have >= want {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let secs = started.elapsed().as_secs_f64();
    report.check(
        "personas: a new computed trait is backfilled for every person",
        have >= want,
        format!("{have} of {want} people with a value after {secs:.1} s"),
    );
    report.figure(
        "personas",
        format!(
            "backfill of a new trait, {} people / {} events (s)",
            sizes.people,
            sizes.events + sizes.track
        ),
        secs,
        "s",
        Some(Budget::AtMost(10.0)),
    );
    Ok(())
}

/// The `true` (or `false`) key of every person for `key` at a person endpoint.
fn keys(sizes: &Sizes, key: &str, value: bool) -> Vec<String> {
    (0..sizes.people)
        .map(|u| format!("user-{u:06}|{{\"{key}\":{value}}}"))
        .collect()
}

/// An audience of every person whose events are inside a window that ends
/// at `boundary`: its first sync (every member `true`, once, signed), then
/// the window passing (every member `false`).
pub async fn first_sync_and_expiry(
    h: &Harness,
    sizes: &Sizes,
    boundary: chrono::DateTime<chrono::Utc>,
    window_secs: i64,
    endpoint: &Endpoint,
    report: &mut Report,
) -> anyhow::Result<()> {
    let quiet = h.sluice.create_source("personas-out").await?;
    let dest = h
        .sluice
        .create_webhook(
            &quiet.id,
            "personas",
            std::slice::from_ref(&endpoint.url),
            SECRET,
        )
        .await?;
    let started = Instant::now();
    let body = json!({"name": "bench sync", "destination_ids": [dest],
        "definition": {"condition": {"performed": {"event": "Order Completed",
                                                   "window": {"seconds": window_secs}}}}});
    h.sluice.admin(Method::POST, "/audiences", body).await?;
    let entered = keys(sizes, "bench_sync", true);
    let done = h.sink.wait_ids(endpoint, &entered, sizes.wait).await;
    let audit = h.sink.audit(endpoint, &entered);
    report.check(
        "personas: an audience's first sync reaches every member once, signed",
        done.is_some() && audit.all_once(),
        once_detail(&audit),
    );
    if let Some(done) = done {
        report.figure(
            "personas",
            format!(
                "first sync of {} members, create -> last at sink (s)",
                sizes.people
            ),
            done.duration_since(started).as_secs_f64(),
            "s",
            Some(Budget::AtMost(15.0)),
        );
    }
    // The window closes for everyone at `boundary` (every event carries one
    // timestamp); the clock is the bench's own.
    let until = (boundary - chrono::Utc::now())
        .to_std()
        .unwrap_or(Duration::ZERO);
    let boundary_at = Instant::now() + until;
    let left = keys(sizes, "bench_sync", false);
    let done = h.sink.wait_ids(endpoint, &left, until + sizes.wait).await;
    let audit = h.sink.audit(endpoint, &left);
    report.check(
        "personas: every member leaves when the window passes, once each",
        done.is_some() && audit.all_once(),
        once_detail(&audit),
    );
    if let Some(done) = done {
        report.figure(
            "personas",
            format!(
                "window expiry of {} members, boundary -> last false (s)",
                sizes.people
            ),
            done.saturating_duration_since(boundary_at).as_secs_f64(),
            "s",
            Some(Budget::AtMost(5.0)),
        );
    }
    Ok(())
}
