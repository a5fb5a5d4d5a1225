//! User deletion and suppression end to end (`docs/privacy.md`): calls in
//! through the collection API, regulations through the admin API, delete
//! notifications out at a real receiver, signed.

mod deletion;
mod failure;
#[cfg(feature = "postgres-tests")]
mod postgres;
mod purge;
mod purge_bytes;
mod scoped;
mod suppression;

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use sluice_testkit::Receiver;

use crate::support::{TestServer, eventually, test_config};

pub const SECRET: &str = "whsec-privacy-0123456789";

/// A server whose profile engine and regulation job poll fast.
pub async fn start() -> (TestServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = test_config(dir.path());
    config.personas.poll_interval_ms = 20;
    (TestServer::start_with(config).await, dir)
}

/// A signed Webhooks destination connected to `sources`.
pub async fn hook(s: &TestServer, sources: &[&str], rx: &Receiver) -> String {
    let body = json!({
        "name": "hook", "type": "Webhooks", "source_ids": sources,
        "settings": {"urls": [{"url": rx.url()}], "sharedSecret": SECRET},
    });
    let (status, body) = s.admin(Method::POST, "/destinations", Some(body)).await;
    assert_eq!(status, 201, "{body}");
    body["id"].as_str().expect("id").to_owned()
}

/// Sends one call to `/v1/{kind}`, expecting 200.
pub async fn send(s: &TestServer, key: &str, kind: &str, call: Value) {
    let (status, body) = s
        .collect(&format!("/v1/{kind}"), Some(key), call.to_string())
        .await;
    assert_eq!(status, 200, "{body}");
}

/// Creates a regulation; returns its id.
pub async fn regulate(s: &TestServer, kind: &str, ids: &[&str], source: Option<&str>) -> String {
    let mut body = json!({"regulationType": kind, "subjectType": "USER_ID", "subjectIds": ids});
    if let Some(source) = source {
        body["source_id"] = json!(source);
    }
    let (status, body) = s.admin(Method::POST, "/regulations", Some(body)).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["regulateId"], body["id"]);
    body["id"].as_str().expect("id").to_owned()
}

/// Waits for a regulation to finish; returns its detail.
pub async fn finished(s: &TestServer, id: &str) -> Value {
    eventually(20, || async {
        let (status, body) = s
            .admin(Method::GET, &format!("/regulations/{id}"), None)
            .await;
        assert_eq!(status, 200, "{body}");
        (body["status"] == json!("FINISHED")).then_some(body)
    })
    .await
}

/// Delete notifications received so far, after checking each signature.
pub fn deletes(rx: &Receiver) -> Vec<Value> {
    rx.requests()
        .iter()
        .filter_map(|r| {
            let body: Value = serde_json::from_slice(&r.body).expect("json body");
            (body["type"] == json!("delete")).then(|| {
                assert_eq!(
                    r.header("x-signature"),
                    Some(sluice_signing::sign(SECRET.as_bytes(), &r.body).as_str())
                );
                body
            })
        })
        .collect()
}

/// Waits for `n` delete notifications, then a little longer to catch extras.
pub async fn wait_deletes(rx: &Receiver, n: usize) -> Vec<Value> {
    eventually(15, || async { (deletes(rx).len() >= n).then_some(()) }).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    deletes(rx)
}

/// Whether any stored event of `source` mentions `needle`.
pub async fn stored_mentions(s: &TestServer, source: &str, needle: &str) -> bool {
    s.events(source)
        .await
        .iter()
        .any(|e| e.to_string().contains(needle))
}
