//! Computed traits and audiences end to end: calls in through the
//! collection API, identify messages out at a real receiver, signed.
//! One module per behaviour; the shared setup is here.

mod audiences;
mod defaults;
mod identity;
mod restart;
mod resync;
mod scale;
mod traits;

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use sluice_testkit::Receiver;

use crate::support::{TestServer, test_config};

pub(super) const SECRET: &str = "whsec-personas-0123456789";

/// A server with a fast profile engine, a source to send from, and a
/// Webhooks destination (on an otherwise unused source) for personas.
pub(super) async fn setup() -> (TestServer, tempfile::TempDir, String, String, Receiver) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (s, key, dest, rx) = setup_with(test_config(dir.path())).await;
    (s, dir, key, dest, rx)
}

/// [`setup`] on `config`, with its engine made fast: the server, the
/// write key of `app` and the destination on `quiet`.
pub(crate) async fn setup_with(
    mut config: sluice_server::Config,
) -> (TestServer, String, String, Receiver) {
    config.personas.poll_interval_ms = 20;
    let s = TestServer::start_with(config).await;
    let (_src, key) = s.source("app").await;
    let (quiet, _) = s.source("quiet").await;
    let rx = Receiver::start().await;
    let dest = s
        .webhook(&quiet, json!([{"url": rx.url()}]), Some(SECRET))
        .await;
    (s, key, dest, rx)
}

pub(super) async fn track(s: &TestServer, key: &str, user: &str, event: &str, props: Value) {
    let call = json!({"userId": user, "event": event, "properties": props});
    assert_eq!(
        s.collect("/v1/track", Some(key), call.to_string()).await.0,
        200
    );
}

/// Bodies received so far, parsed, after checking each signature.
pub(super) fn bodies(rx: &Receiver) -> Vec<Value> {
    rx.requests()
        .iter()
        .map(|r| {
            assert_eq!(
                r.header("x-signature"),
                Some(sluice_signing::sign(SECRET.as_bytes(), &r.body).as_str())
            );
            serde_json::from_slice(&r.body).expect("json body")
        })
        .collect()
}

pub(super) async fn wait_bodies(rx: &Receiver, n: usize) -> Vec<Value> {
    rx.wait_for(n, Duration::from_secs(15)).await;
    bodies(rx)
}

pub(super) async fn create(s: &TestServer, path: &str, body: Value) -> Value {
    let (status, body) = s.admin(Method::POST, path, Some(body)).await;
    assert_eq!(status, 201, "{body}");
    body
}

/// Creates the computed trait "Seen", a counter of `Seen` calls sent to
/// `dest`.
pub(super) async fn count_seen(s: &TestServer, dest: &str) -> Value {
    create(
        s,
        "/computed-traits",
        json!({"name": "Seen", "destination_ids": [dest],
               "definition": {"kind": "counter", "event": "Seen"}}),
    )
    .await
}

/// Message ids of every delivery to `dest`.
pub(super) async fn outbox(s: &TestServer, dest: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut before = String::new();
    loop {
        let (code, page) = s
            .admin(
                Method::GET,
                &format!("/destinations/{dest}/deliveries?limit=500{before}"),
                None,
            )
            .await;
        assert_eq!(code, 200, "{page}");
        for d in page["data"].as_array().into_iter().flatten() {
            out.push(d["message_id"].as_str().unwrap_or_default().to_owned());
        }
        match page["next_before"].as_i64() {
            Some(n) => before = format!("&before={n}"),
            None => return out,
        }
    }
}
