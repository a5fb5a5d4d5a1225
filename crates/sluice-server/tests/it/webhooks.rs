//! Webhook delivery through the whole service: a call sent to the collection
//! API arrives at a real receiver, signed and shaped, with its attempt logged.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use sluice_testkit::{Receiver, Reply};

use crate::support::{TestServer, eventually, metric, test_config};

const SECRET: &str = "whsec-test-0123456789";

async fn deliveries_of(s: &TestServer, message_id: &str) -> Vec<Value> {
    let (status, body) = s
        .admin(
            Method::GET,
            &format!("/deliveries?message_id={message_id}"),
            None,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    body["data"].as_array().cloned().unwrap_or_default()
}

/// Sends single calls to `node` and checks each went from ingest straight
/// to its delivery engine, without a claim, and was recorded as any other.
pub(crate) async fn calls_go_from_ingest_to_the_engine(node: &TestServer) {
    const CALLS: usize = 20;
    let (src, key) = node.source("direct").await;
    let rx = Receiver::start().await;
    node.webhook(&src, json!([rx.url()]), Some("direct-secret-1"))
        .await;
    for i in 0..CALLS {
        let call = json!({"userId": "u", "event": "e", "messageId": format!("d-{i}")});
        let (status, body) = node
            .collect("/v1/track", Some(&key), call.to_string())
            .await;
        assert_eq!(status, 200, "{body}");
    }
    eventually(20, || async {
        (rx.requests().len() >= CALLS).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let got = rx.requests();
    assert_eq!(got.len(), CALLS, "each call sent once");
    assert!(got.iter().all(|r| r.header("x-signature")
        == Some(sluice_signing::sign(b"direct-secret-1", &r.body).as_str())));
    let scrape = node.metrics().await;
    assert_eq!(
        metric(&scrape, "sluice_delivery_from_ingest_total "),
        CALLS as f64,
        "every delivery went from ingest to the engine"
    );
    // Each delivery is recorded as any other, attempt included.
    let listed = eventually(10, || async {
        let (_, rows) = node
            .admin(Method::GET, "/deliveries?state=succeeded", None)
            .await;
        let rows = rows["data"].as_array()?.clone();
        (rows.len() == CALLS).then_some(rows)
    })
    .await;
    let id = listed[0]["id"].as_i64().unwrap();
    let (_, detail) = node
        .admin(Method::GET, &format!("/deliveries/{id}"), None)
        .await;
    assert_eq!(detail["attempts"][0]["status"], 200, "{detail}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_are_sent_without_a_claim() {
    let s = TestServer::start().await;
    calls_go_from_ingest_to_the_engine(&s).await;
}

#[tokio::test]
async fn track_call_arrives_signed_and_its_attempt_is_logged() {
    let s = TestServer::start().await;
    let (src, key) = s.source("web").await;
    let rx = Receiver::start().await;
    s.webhook(
        &src,
        json!([{"url": rx.url(), "headers": {"X-Team": "data"}}]),
        Some(SECRET),
    )
    .await;
    let call = json!({"userId": "u1", "event": "Order Completed", "messageId": "m-track-1",
                      "properties": {"total": 19.5, "n": 1e21, "name": "café ☕"}});
    assert_eq!(
        s.collect("/v1/track", Some(&key), call.to_string()).await.0,
        200
    );

    let got = rx.wait_for(1, Duration::from_secs(10)).await;
    let req = &got[0];
    assert_eq!(req.method, "POST");
    assert_eq!(req.header("user-agent"), Some("Sluice/1.0"));
    assert_eq!(req.header("content-type"), Some("application/json"));
    assert_eq!(req.header("x-team"), Some("data"));
    assert_eq!(req.header("x-sluice-message-id"), Some("m-track-1"));
    assert_eq!(req.header("x-sluice-attempt"), Some("1"));
    assert_eq!(
        req.header("x-signature"),
        Some(sluice_signing::sign(SECRET.as_bytes(), &req.body).as_str())
    );
    // Re-serializing the parsed body, as Node receivers do, gives the same bytes.
    let parsed: Value = serde_json::from_slice(&req.body).unwrap();
    assert_eq!(
        sluice_signing::to_js_json(&parsed).as_bytes(),
        &req.body[..]
    );
    assert_eq!(parsed["version"], json!(1));
    assert_eq!(parsed["type"], json!("track"));
    assert_eq!(parsed["event"], json!("Order Completed"));
    assert_eq!(parsed["properties"]["n"], json!(1e21));
    assert!(String::from_utf8_lossy(&req.body).contains("\"n\":1e+21"));

    let rows = eventually(10, || async {
        let rows = deliveries_of(&s, "m-track-1").await;
        (rows.len() == 1 && rows[0]["state"] == json!("succeeded")).then_some(rows)
    })
    .await;
    let id = rows[0]["id"].as_i64().unwrap();
    let (_, detail) = s
        .admin(Method::GET, &format!("/deliveries/{id}"), None)
        .await;
    assert_eq!(detail["attempts"][0]["status"], json!(200));
    assert_eq!(detail["attempts"][0]["url"], json!(rx.url()));
}

#[tokio::test]
async fn integrations_decide_whether_webhooks_get_the_call() {
    let s = TestServer::start().await;
    let (src, key) = s.source("web").await;
    let rx = Receiver::start().await;
    s.webhook(&src, json!([rx.url()]), None).await;
    let cases = [
        ("default", Value::Null, true),
        ("off", json!({"Webhooks": false}), false),
        ("all-off", json!({"All": false}), false),
        (
            "all-off-webhooks-on",
            json!({"All": false, "Webhooks": true}),
            true,
        ),
        (
            "all-on-webhooks-off",
            json!({"All": true, "Webhooks": false}),
            false,
        ),
        ("wrong-case", json!({"webhooks": false}), true),
        ("other-off", json!({"Mixpanel": false}), true),
    ];
    for (name, integrations, _) in &cases {
        let mut call = json!({"userId": "u", "event": name, "messageId": format!("m-{name}")});
        if !integrations.is_null() {
            call["integrations"] = integrations.clone();
        }
        assert_eq!(
            s.collect("/v1/track", Some(&key), call.to_string()).await.0,
            200
        );
    }
    let expected: Vec<&str> = cases.iter().filter(|c| c.2).map(|c| c.0).collect();
    let got = rx.wait_for(expected.len(), Duration::from_secs(10)).await;
    let mut names: Vec<String> = got
        .iter()
        .map(|r| {
            serde_json::from_slice::<Value>(&r.body).unwrap()["event"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    names.sort();
    let mut want: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(names, want);
    // Routing happens at ingest: a call turned off never gets a delivery.
    for (name, _, on) in &cases {
        assert_eq!(
            deliveries_of(&s, &format!("m-{name}")).await.len(),
            usize::from(*on),
            "{name}"
        );
    }
}

#[tokio::test]
async fn disabled_destination_receives_nothing() {
    let s = TestServer::start().await;
    let (src, key) = s.source("web").await;
    let rx = Receiver::start().await;
    let dst = s.webhook(&src, json!([rx.url()]), None).await;
    let (status, _) = s
        .admin(
            Method::PATCH,
            &format!("/destinations/{dst}"),
            Some(json!({"enabled": false})),
        )
        .await;
    assert_eq!(status, 200);
    let call = json!({"userId": "u", "event": "e", "messageId": "m-off"});
    assert_eq!(
        s.collect("/v1/track", Some(&key), call.to_string()).await.0,
        200
    );
    assert!(deliveries_of(&s, "m-off").await.is_empty());
    assert!(rx.requests().is_empty());
}

#[tokio::test]
async fn dead_delivery_is_replayed_through_the_admin_api() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    config.delivery.retry_window_secs = 1;
    let s = TestServer::start_with(config).await;
    let (src, key) = s.source("web").await;
    let rx = Receiver::start().await;
    rx.set_default(Reply::status(500));
    let dst = s.webhook(&src, json!([rx.url()]), None).await;
    let call = json!({"userId": "u", "event": "e", "messageId": "m-dead"});
    assert_eq!(
        s.collect("/v1/track", Some(&key), call.to_string()).await.0,
        200
    );
    eventually(15, || async {
        let rows = deliveries_of(&s, "m-dead").await;
        (rows.first()?["state"] == json!("dead")).then_some(())
    })
    .await;
    let failed = rx.requests().len();
    assert!(
        failed >= 2,
        "500s are retried until the window ends (got {failed})"
    );

    rx.set_default(Reply::status(200));
    let (status, body) = s
        .admin(Method::POST, &format!("/destinations/{dst}/replay"), None)
        .await;
    assert_eq!((status, body["replayed"].clone()), (200, json!(1)));
    eventually(10, || async {
        let rows = deliveries_of(&s, "m-dead").await;
        (rows.first()?["state"] == json!("succeeded")).then_some(())
    })
    .await;
    assert_eq!(rx.requests().len(), failed + 1);
}

#[tokio::test]
async fn client_errors_are_not_retried() {
    let s = TestServer::start().await;
    let (src, key) = s.source("web").await;
    let rx = Receiver::start().await;
    rx.set_default(Reply::status(400));
    s.webhook(&src, json!([rx.url()]), None).await;
    let call = json!({"userId": "u", "event": "e", "messageId": "m-400"});
    assert_eq!(
        s.collect("/v1/track", Some(&key), call.to_string()).await.0,
        200
    );
    eventually(10, || async {
        let rows = deliveries_of(&s, "m-400").await;
        (rows.first()?["state"] == json!("dead")).then_some(())
    })
    .await;
    assert_eq!(rx.requests().len(), 1);
}

#[tokio::test]
async fn settings_sent_back_as_read_keep_signing_with_the_stored_secrets() {
    let s = TestServer::start().await;
    let (src, key) = s.source("web").await;
    let rx = Receiver::start().await;
    let dst = s
        .webhook(
            &src,
            json!([{"url": rx.url(), "headers": {"Authorization": "Bearer s3cr3t-t0ken-value"}}]),
            Some(SECRET),
        )
        .await;
    let path = format!("/destinations/{dst}");
    let generate = || async {
        let (status, body) = s
            .admin(
                Method::PATCH,
                &path,
                Some(json!({"settings": {"standardWebhooks": {"secret": "generate"}}})),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        body["settings"]["standardWebhooks"]["secret"].clone()
    };
    // Generate, then rotate once, so the read shows a rotation in progress.
    assert_ne!(generate().await, generate().await);

    // Read, then send the settings back exactly as read.
    let (_, read) = s.admin(Method::GET, &path, None).await;
    let settings = read["settings"].clone();
    assert_eq!(settings["sharedSecret"], json!("whse…"));
    assert!(settings["standardWebhooks"]["previousSecretValidUntil"].is_string());
    let (status, body) = s
        .admin(
            Method::PATCH,
            &path,
            Some(json!({"name": "renamed", "settings": settings})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["settings"], read["settings"]);

    let call = json!({"userId": "u1", "event": "Round Trip", "messageId": "m-round-trip"});
    assert_eq!(
        s.collect("/v1/track", Some(&key), call.to_string()).await.0,
        200
    );
    let got = rx.wait_for(1, Duration::from_secs(10)).await;
    let req = &got[0];
    assert_eq!(
        req.header("x-signature"),
        Some(sluice_signing::sign(SECRET.as_bytes(), &req.body).as_str()),
        "signed with the stored shared secret, not its mask"
    );
    assert_eq!(
        req.header("authorization"),
        Some("Bearer s3cr3t-t0ken-value")
    );
    let signatures = req.header("webhook-signature").unwrap_or_default();
    assert_eq!(
        signatures.split(' ').count(),
        2,
        "both secrets sign during the rotation: {signatures}"
    );

    // A made-up mask is refused, and the stored secret still signs.
    let (status, body) = s
        .admin(
            Method::PATCH,
            &path,
            Some(json!({"settings": {"sharedSecret": "wxyz…"}})),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["code"], json!("invalid_field"));
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .starts_with("settings.sharedSecret")
    );
}
