//! `kill -9` during an audience's first sync: after a restart every member
//! is in the outbox exactly once, and no member got two different messages.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};
use sluice_testkit::Receiver;

use crate::process::{TOKEN, admin, start};

const PEOPLE: usize = 3000;

/// Message ids of every delivery to `dest`.
async fn outbox(base: &str, dest: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut before = String::new();
    loop {
        let path = format!("/destinations/{dest}/deliveries?limit=500{before}");
        let page = admin(base, reqwest::Method::GET, &path, None).await;
        for d in page["data"].as_array().into_iter().flatten() {
            out.push(d["message_id"].as_str().unwrap_or_default().to_owned());
        }
        match page["next_before"].as_i64() {
            Some(n) => before = format!("&before={n}"),
            None => return out,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_a_first_sync_leaves_every_member_in_the_outbox_once() {
    let dir = tempfile::tempdir().unwrap();
    let env = [("SLUICE_PERSONAS__POLL_INTERVAL_MS", "20")];
    let mut s = start(dir.path(), &env).await;
    let src = admin(
        &s.base,
        reqwest::Method::POST,
        "/sources",
        Some(json!({"name": "app"})),
    )
    .await;
    let quiet = admin(
        &s.base,
        reqwest::Method::POST,
        "/sources",
        Some(json!({"name": "q"})),
    )
    .await;
    let rx = Receiver::start().await;
    let dest = admin(
        &s.base,
        reqwest::Method::POST,
        "/destinations",
        Some(
            json!({"name": "hook", "type": "Webhooks", "source_ids": [quiet["id"]],
                    "settings": {"urls": [rx.url()]}}),
        ),
    )
    .await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let key = src["write_key"].as_str().unwrap();
    let auth = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{key}:"))
    );
    for chunk in 0..PEOPLE / 100 {
        let batch: Vec<Value> = (0..100)
            .map(|i| {
                json!({"type": "identify", "userId": format!("u{:05}", chunk * 100 + i),
                            "traits": {"plan": "pro"}})
            })
            .collect();
        let r = reqwest::Client::new()
            .post(format!("{}/v1/batch", s.base))
            .header("authorization", &auth)
            .body(json!({"batch": batch}).to_string())
            .send()
            .await
            .expect("batch");
        assert_eq!(r.status(), 200);
    }
    let last = format!("/profiles/u{:05}", PEOPLE - 1);
    for _ in 0..1500 {
        let r = reqwest::Client::new()
            .get(format!("{}/api/v1{last}", s.base))
            .bearer_auth(TOKEN)
            .send()
            .await
            .expect("profile");
        if r.status() == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    admin(
        &s.base,
        reqwest::Method::POST,
        "/audiences",
        Some(json!({"name": "Pro", "destination_ids": [dest],
                    "definition": {"condition": {"trait": {"key": "plan", "op": "equals", "value": "pro"}}}})),
    )
    .await;
    // Kill as soon as the first sync is visibly under way.
    for _ in 0..1500 {
        if !rx.requests().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    s.child.start_kill().expect("SIGKILL");
    s.child.wait().await.expect("reap");
    let received_before = rx.requests().len();

    let s = start(dir.path(), &env).await;
    for _ in 0..600 {
        if outbox(&s.base, &dest).await.len() >= PEOPLE {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let ids_again = outbox(&s.base, &dest).await;
    let unique: HashSet<&String> = ids_again.iter().collect();
    assert_eq!(
        (unique.len(), ids_again.len()),
        (PEOPLE, PEOPLE),
        "one message per member in the outbox (received before the kill: {received_before})"
    );
    // What arrived: never two different messages for one member.
    let mut per_user: HashMap<String, HashSet<String>> = HashMap::new();
    for r in rx.requests() {
        let b: Value = serde_json::from_slice(&r.body).expect("json");
        per_user
            .entry(b["userId"].as_str().unwrap_or_default().to_owned())
            .or_default()
            .insert(b["messageId"].as_str().unwrap_or_default().to_owned());
        assert_eq!(b["traits"], json!({"pro": true}));
    }
    assert!(
        per_user.values().all(|m| m.len() == 1),
        "a member got two messages"
    );
    assert!(received_before > 0 && !per_user.is_empty());
}
