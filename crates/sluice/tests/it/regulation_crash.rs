//! A regulation survives `kill -9`: killed mid-purge, the restarted process
//! finishes it, and each subject's delete notification is created once.

use std::collections::HashSet;
use std::time::Duration;

use base64::Engine;
use rand::Rng;
use reqwest::Client;
use serde_json::{Value, json};
use sluice_testkit::Receiver;

use crate::process::{admin, start};

const USERS: usize = 1500;
const SECRET: &str = "whsec-crash-0123456789";
const FAST_LEASE: &[(&str, &str)] = &[
    ("SLUICE_PERSONAS__LEASE_TTL_SECS", "1"),
    ("SLUICE_PERSONAS__POLL_INTERVAL_MS", "20"),
    ("SLUICE_STORAGE__SYNCHRONOUS", "normal"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_regulation_killed_mid_purge_resumes_and_notifies_each_subject_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let http = Client::new();
    let rx = Receiver::start().await;
    let mut node = start(dir.path(), FAST_LEASE).await;
    let base = node.base.clone();
    let src = admin(
        &base,
        reqwest::Method::POST,
        "/sources",
        Some(json!({"name": "s"})),
    )
    .await;
    let (src_id, key) = (
        src["id"].as_str().unwrap_or_default(),
        src["write_key"].as_str().unwrap_or_default(),
    );
    admin(
        &base,
        reqwest::Method::POST,
        "/destinations",
        Some(json!({
            "name": "hook", "type": "Webhooks", "source_ids": [src_id],
            "settings": {"urls": [{"url": rx.url()}], "sharedSecret": SECRET},
        })),
    )
    .await;
    let auth = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{key}:"))
    );
    let users: Vec<String> = (0..USERS).map(|i| format!("crash-user-{i}")).collect();
    for chunk in users.chunks(500) {
        let batch: Vec<Value> = chunk
            .iter()
            .map(|u| json!({"type": "track", "userId": u, "event": "E"}))
            .collect();
        let r = http
            .post(format!("{base}/v1/batch"))
            .header("authorization", &auth)
            .body(json!({"batch": batch}).to_string())
            .send()
            .await
            .expect("batch");
        assert_eq!(r.status(), 200);
    }

    let created = admin(
        &base,
        reqwest::Method::POST,
        "/regulations",
        Some(json!({
            "regulationType": "DELETE_ONLY", "subjectType": "USER_ID", "subjectIds": users,
        })),
    )
    .await;
    let id = created["id"].as_str().unwrap_or_default().to_owned();
    // Kill at a random moment while the job runs (or just before it starts).
    let wait = rand::rng().random_range(0..400);
    tokio::time::sleep(Duration::from_millis(wait)).await;
    let pid = node.pid();
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status();
    assert!(killed.is_ok_and(|s| s.success()));
    let _ = node.child.wait().await;

    let node = start(dir.path(), FAST_LEASE).await;
    let base = node.base.clone();
    let mut detail = Value::Null;
    for _ in 0..1500 {
        detail = admin(
            &base,
            reqwest::Method::GET,
            &format!("/regulations/{id}"),
            None,
        )
        .await;
        if detail["status"] == json!("FINISHED") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(detail["status"], json!("FINISHED"), "{}", detail["status"]);
    assert_eq!(detail["subjectsDone"], json!(USERS));
    let notifications = detail["notifications"].as_array().map_or(0, Vec::len);
    assert_eq!(
        notifications, USERS,
        "one notification per subject, none twice"
    );
    let events = admin(
        &base,
        reqwest::Method::GET,
        &format!("/sources/{src_id}/events?limit=500"),
        None,
    )
    .await;
    assert!(
        !events.to_string().contains("crash-user-"),
        "purged events are gone"
    );

    // Every subject is notified (a delivery in flight at the kill may be
    // sent twice: delivery is at-least-once; creation is exactly once).
    let notified = |rx: &Receiver| -> HashSet<String> {
        rx.requests()
            .iter()
            .filter_map(|r| serde_json::from_slice::<Value>(&r.body).ok())
            .filter(|b| b["type"] == json!("delete"))
            .filter_map(|b| b["userId"].as_str().map(str::to_owned))
            .collect()
    };
    for _ in 0..3000 {
        if notified(&rx).len() == USERS {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(notified(&rx).len(), USERS);
}
