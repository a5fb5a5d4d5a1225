//! Destinations whose host names never resolve (the reserved `.invalid`
//! top-level domain) sit beside a healthy destination on the same source.
//! Every lookup of theirs fails, at the rate their deliveries are tried;
//! that must cost the healthy destination none of its events, and the
//! server no thread per lookup.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};
use sluice_testkit::Receiver;

use crate::process::{TOKEN, admin, basic, create_source, start};

const UNRESOLVABLE_DESTINATIONS: usize = 20;
const URLS_EACH: usize = 5;
const EVENTS: usize = 2_000;

/// Threads the server may have at most. Its fixed set (runtime workers,
/// the store's writer and readers, the profile engine) is well under it;
/// a thread per pending name lookup is not.
const THREAD_BOUND: usize = 64;

fn threads_of(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, Iterator::count)
}

#[tokio::test]
async fn unresolvable_neighbours_neither_starve_a_healthy_destination_nor_grow_threads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut sluice = start(
        dir.path(),
        &[
            ("SLUICE_DELIVERY__BACKOFF_BASE_MS", "50"),
            ("SLUICE_DELIVERY__BACKOFF_CAP_MS", "500"),
        ],
    )
    .await;
    let base = sluice.base.clone();
    let (src, key) = create_source(&base, "web").await;

    // The healthy receiver is named `localhost`, which must still resolve
    // (to loopback, allowed for these tests) without the system resolver.
    let rx = Receiver::start().await;
    let healthy_url = rx.url().replace("127.0.0.1", "localhost");
    admin(
        &base,
        Method::POST,
        "/destinations",
        Some(json!({"name": "healthy", "source_ids": [src], "settings": {"urls": [healthy_url]}})),
    )
    .await;
    let mut unresolvable = Vec::new();
    for d in 0..UNRESOLVABLE_DESTINATIONS {
        let urls: Vec<String> = (0..URLS_EACH)
            .map(|u| format!("https://hook-{d}-{u}.sluice-test.invalid/in"))
            .collect();
        let created = admin(
            &base,
            Method::POST,
            "/destinations",
            Some(json!({"name": format!("nowhere-{d}"), "source_ids": [src], "settings": {"urls": urls}})),
        )
        .await;
        unresolvable.push(created["id"].as_str().expect("id").to_owned());
    }

    let pid = sluice.pid();
    let most = Arc::new(AtomicUsize::new(0));
    let sampler = tokio::spawn({
        let most = most.clone();
        async move {
            loop {
                most.fetch_max(threads_of(pid), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    });

    let http = reqwest::Client::new();
    let auth = basic(&key);
    let ids: Vec<String> = (0..EVENTS).map(|i| format!("m-dns-{i}")).collect();
    for chunk in ids.chunks(100) {
        let batch: Vec<Value> = chunk
            .iter()
            .map(|id| json!({"type": "track", "userId": "u", "event": "E", "messageId": id}))
            .collect();
        let sent = http
            .post(format!("{base}/v1/batch"))
            .header("authorization", &auth)
            .body(json!({ "batch": batch }).to_string())
            .send()
            .await
            .expect("batch");
        assert_eq!(sent.status(), 200);
    }

    let deadline = Instant::now() + Duration::from_secs(60);
    let arrived = loop {
        let arrived: HashSet<String> = rx
            .requests()
            .iter()
            .filter_map(|r| r.header("x-sluice-message-id").map(str::to_owned))
            .collect();
        if arrived.len() >= EVENTS || Instant::now() > deadline {
            break arrived;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // The neighbours keep failing for a while longer: threads are sampled
    // through that too.
    tokio::time::sleep(Duration::from_secs(1)).await;
    sampler.abort();
    let most_threads = most.load(Ordering::Relaxed).max(threads_of(pid));
    let missing = ids.iter().filter(|id| !arrived.contains(*id)).count();

    // A failed lookup is an ordinary retryable attempt with a clear error.
    let http_admin = reqwest::Client::new();
    let page: Value = http_admin
        .get(format!(
            "{base}/api/v1/deliveries?destination_id={}&message_id=m-dns-0",
            unresolvable[0]
        ))
        .bearer_auth(TOKEN)
        .send()
        .await
        .expect("deliveries")
        .json()
        .await
        .expect("json");
    let _ = sluice.child.kill().await;

    assert_eq!(
        missing, 0,
        "healthy destination is missing {missing} events"
    );
    assert!(
        most_threads <= THREAD_BOUND,
        "the server grew to {most_threads} threads"
    );
    let delivery = &page["data"][0];
    assert_eq!(delivery["state"], "pending", "{page}");
    let error = delivery["last_error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with("DNS lookup failed, request not sent: no such host hook-0-")
            && error.ends_with(".sluice-test.invalid (NXDOMAIN)"),
        "{error}"
    );
}
