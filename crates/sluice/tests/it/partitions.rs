//! The profile engine on two real nodes sharing one PostgreSQL: each
//! computes a share of the people, and when one is killed (`kill -9`, so
//! it leaves nothing tidy behind) the other takes its partitions over and
//! every acknowledged call is still computed. Needs
//! `SLUICE_TEST_POSTGRES_URL` (scripts/postgres-test-server.sh start).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{Value, json};
use sluice_testkit::Receiver;

use crate::process::{Sluice, admin, post_batch, start};

const PEOPLE: usize = 40;

/// The latest `clicks` each person's identify messages carried.
fn latest(rx: &Receiver) -> HashMap<String, i64> {
    let mut out = HashMap::new();
    for r in rx.requests() {
        let Ok(body) = serde_json::from_slice::<Value>(&r.body) else {
            continue;
        };
        if let (Some(user), Some(n)) = (body["userId"].as_str(), body["traits"]["clicks"].as_i64())
        {
            let seen = out.entry(user.to_owned()).or_insert(0);
            *seen = (*seen).max(n);
        }
    }
    out
}

async fn clicks(node: &Sluice, auth: &str, round: usize) {
    let batch: Vec<Value> = (0..PEOPLE)
        .map(|i| {
            json!({"type": "track", "userId": format!("u{i}"), "event": "Click",
                   "messageId": format!("r{round}-u{i}")})
        })
        .collect();
    assert_eq!(post_batch(&node.base, auth, batch).await, Some(200));
}

async fn wait_for(rx: &Receiver, count: i64, within: Duration) -> Duration {
    let started = Instant::now();
    while started.elapsed() < within {
        let got = latest(rx);
        if got.len() == PEOPLE && got.values().all(|n| *n >= count) {
            return started.elapsed();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let got = latest(rx);
    panic!("not every person reached {count} clicks within {within:?}: {got:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_of_an_engine_node_moves_its_partitions_and_every_call_is_computed() {
    let url = std::env::var("SLUICE_TEST_POSTGRES_URL").unwrap_or_else(|_| {
        panic!("SLUICE_TEST_POSTGRES_URL is not set: run scripts/postgres-test-server.sh start")
    });
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let schema = format!("sluice_it_parts_{}_{nanos}", std::process::id());
    let env = [
        ("SLUICE_STORAGE__BACKEND", "postgres"),
        ("SLUICE_STORAGE__POSTGRES_URL", url.as_str()),
        ("SLUICE_STORAGE__POSTGRES_SCHEMA", schema.as_str()),
        ("SLUICE_PERSONAS__POLL_INTERVAL_MS", "20"),
        ("SLUICE_PERSONAS__LEASE_TTL_SECS", "3"),
    ];
    let (dir_a, dir_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut a = start(dir_a.path(), &env).await;
    let b = start(dir_b.path(), &env).await;
    let src = admin(
        &a.base,
        reqwest::Method::POST,
        "/sources",
        Some(json!({"name": "app"})),
    )
    .await;
    let quiet = admin(
        &a.base,
        reqwest::Method::POST,
        "/sources",
        Some(json!({"name": "quiet"})),
    )
    .await;
    let rx = Receiver::start().await;
    let dest = admin(
        &a.base,
        reqwest::Method::POST,
        "/destinations",
        Some(
            json!({"name": "hook", "type": "Webhooks", "source_ids": [quiet["id"]],
                    "settings": {"urls": [rx.url()]}}),
        ),
    )
    .await;
    admin(
        &a.base,
        reqwest::Method::POST,
        "/computed-traits",
        Some(json!({"name": "Clicks", "destination_ids": [dest["id"]],
                    "definition": {"kind": "counter", "event": "Click"}})),
    )
    .await;
    let key = src["write_key"].as_str().unwrap();
    let auth = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{key}:"))
    );
    // Both nodes compute: each holds a share within a renewal or two (a
    // third of the TTL) of the other's start. The two metrics are read one
    // after the other while partitions move, so a read may count one twice
    // (the giver's metric not yet updated): the shares settle, every
    // partition held once.
    let shares = |base: &str| {
        let base = base.to_owned();
        async move {
            let text = reqwest::get(format!("{base}/metrics"))
                .await
                .expect("metrics")
                .text()
                .await
                .expect("text");
            text.lines()
                .find_map(|l| l.strip_prefix("sluice_profile_partitions "))
                .and_then(|v| v.trim().parse::<f64>().ok())
                .unwrap_or(0.0)
        }
    };
    let started = Instant::now();
    let (share_a, share_b) = loop {
        let (share_a, share_b) = (shares(&a.base).await, shares(&b.base).await);
        let settled = share_a > 0.0 && share_b > 0.0 && share_a + share_b == 16.0;
        if settled || started.elapsed() > Duration::from_secs(20) {
            break (share_a, share_b);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(share_a > 0.0 && share_b > 0.0, "{share_a} / {share_b}");
    assert_eq!(share_a + share_b, 16.0, "every partition held once");
    for round in 0..2 {
        clicks(&a, &auth, round).await;
        clicks(&b, &auth, round + 10).await;
    }
    wait_for(&rx, 4, Duration::from_secs(30)).await;

    // A dies holding its share; b takes everything acknowledged from here.
    a.child.start_kill().expect("SIGKILL");
    a.child.wait().await.expect("reap");
    clicks(&b, &auth, 20).await;
    let took = wait_for(&rx, 5, Duration::from_secs(30)).await;
    assert!(
        took < Duration::from_secs(15),
        "a's partitions moved in {took:?} (TTL 3 s)"
    );
    assert!(
        latest(&rx).values().all(|n| *n == 5),
        "each call counted once: {:?}",
        latest(&rx)
    );
    assert_eq!(shares(&b.base).await, 16.0);
    drop(b);
}
