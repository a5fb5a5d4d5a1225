//! Outbound safety through the whole service: the SSRF guard on by default,
//! the operator's allow list, credentials never shown, ids that cannot be
//! delivered refused at ingest, and page properties filled from context.page.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use sluice_testkit::Receiver;

use crate::support::{TestServer, eventually, test_config};

/// A server with the guard as shipped: no network allowed beyond public ones.
async fn strict(allow: &[&str]) -> (tempfile::TempDir, TestServer) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = test_config(dir.path());
    config.delivery.allow_networks = allow.iter().map(|s| (*s).to_owned()).collect();
    (dir, TestServer::start_with(config).await)
}

async fn create(s: &TestServer, src: &str, urls: Value) -> (u16, Value) {
    let body = json!({"name": "hook", "source_ids": [src], "settings": {"urls": urls}});
    s.admin(Method::POST, "/destinations", Some(body)).await
}

#[tokio::test]
async fn destination_urls_naming_blocked_addresses_are_refused_by_default() {
    let (_dir, s) = strict(&[]).await;
    let (src, _) = s.source("web").await;
    for url in [
        "http://127.0.0.1:9000/",
        "http://[::1]:9000/",
        "http://localhost/",
        "http://0.0.0.0/",
        "http://2130706433/",
        "http://127.1/",
        "http://[::ffff:127.0.0.1]/",
        "http://169.254.169.254/latest/meta-data/",
        "http://10.0.0.1/",
        "http://172.16.0.1/",
        "http://192.168.1.1/",
        "http://100.64.0.1/",
        "http://224.0.0.1/",
        "http://255.255.255.255/",
        "http://192.0.2.1/",
        "http://[fd00::1]/",
        "http://[fe80::1]/",
        "http://[ff02::1]/",
        "http://[2001:db8::1]/",
    ] {
        let (status, body) = create(&s, &src, json!([{"url": url}])).await;
        assert_eq!(status, 400, "{url}: {body}");
        assert_eq!(body["code"], "invalid_field", "{url}: {body}");
        let message = body["message"].as_str().unwrap_or_default();
        assert!(
            message.starts_with("settings.urls[0].url") && message.contains("blocked"),
            "{url}: {message}"
        );
    }
    let (status, body) = create(&s, &src, json!(["https://hooks.example.com/x"])).await;
    assert_eq!(status, 201, "{body}");
    // Updates are checked the same way.
    let id = body["id"].as_str().expect("id").to_owned();
    let patch = json!({"settings": {"urls": ["http://127.0.0.1:1/"]}});
    let (status, _) = s
        .admin(Method::PATCH, &format!("/destinations/{id}"), Some(patch))
        .await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn allow_networks_opens_only_the_listed_networks() {
    let (_dir, s) = strict(&["10.0.0.0/8"]).await;
    let (src, _) = s.source("web").await;
    assert_eq!(
        create(&s, &src, json!(["http://10.1.2.3/hook"])).await.0,
        201
    );
    assert_eq!(
        create(&s, &src, json!(["http://127.0.0.1/hook"])).await.0,
        400
    );
    assert_eq!(
        create(&s, &src, json!(["http://192.168.0.1/hook"])).await.0,
        400
    );
}

#[tokio::test]
async fn credentials_are_masked_in_responses_and_the_attempt_log_but_sent_in_full() {
    let s = TestServer::start().await;
    let (src, key) = s.source("web").await;
    let rx = Receiver::start().await;
    let url = rx.url().replace("http://", "http://hookuser:hookpa55word@");
    let token = "Bearer tok-0123456789abcdef";
    let (status, created) = create(
        &s,
        &src,
        json!([{"url": url, "headers": {"Authorization": token, "X-Api-Key": "k-1234567890abcdef", "X-Team": "blue"}}]),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().expect("id").to_owned();
    let (_, listed) = s.admin(Method::GET, "/destinations", None).await;
    for shown in [&created, &listed["data"][0]] {
        let text = shown.to_string();
        for secret in [
            "hookpa55word",
            "hookuser",
            "tok-0123456789abcdef",
            "k-1234567890abcdef",
        ] {
            assert!(!text.contains(secret), "{secret} shown in {text}");
        }
        let entry = &shown["settings"]["urls"][0];
        assert_eq!(entry["headers"]["Authorization"], "Bear…");
        assert_eq!(entry["headers"]["X-Team"], "blue");
        assert!(
            entry["url"]
                .as_str()
                .unwrap_or_default()
                .contains("****:****@")
        );
    }

    // Sending the settings back as shown keeps the stored credentials.
    let patch = json!({"settings": {"urls": created["settings"]["urls"].clone()}});
    let (status, body) = s
        .admin(Method::PATCH, &format!("/destinations/{id}"), Some(patch))
        .await;
    assert_eq!(status, 200, "{body}");

    let call = json!({"userId": "u1", "event": "Signed Up", "messageId": "m-creds"});
    assert_eq!(
        s.collect("/v1/track", Some(&key), call.to_string()).await.0,
        200
    );
    let got = rx.wait_for(1, Duration::from_secs(10)).await;
    assert_eq!(
        got[0].header("authorization"),
        Some(token),
        "stored value kept"
    );
    assert_eq!(got[0].header("x-api-key"), Some("k-1234567890abcdef"));

    let delivery_id = eventually(10, || async {
        let (_, body) = s
            .admin(Method::GET, "/deliveries?message_id=m-creds", None)
            .await;
        let d = body["data"].get(0)?.clone();
        (d["state"] == "succeeded")
            .then(|| d["id"].as_i64())
            .flatten()
    })
    .await;
    let (_, detail) = s
        .admin(Method::GET, &format!("/deliveries/{delivery_id}"), None)
        .await;
    let text = detail.to_string();
    assert!(
        !text.contains("hookpa55word") && !text.contains("hookuser"),
        "{text}"
    );
    assert!(
        detail["attempts"][0]["url"]
            .as_str()
            .unwrap_or_default()
            .contains("****")
    );
}

#[tokio::test]
async fn message_ids_a_header_cannot_carry_are_refused_at_ingest() {
    let s = TestServer::start().await;
    let (_src, key) = s.source("web").await;
    for bad in ["a\nb", "a\rb", "a\u{0}b", "a\u{1f}b", "a\u{7f}b"] {
        let call = json!({"userId": "u1", "event": "E", "messageId": bad});
        let (status, body) = s.collect("/v1/track", Some(&key), call.to_string()).await;
        assert_eq!(status, 400, "{bad:?}: {body}");
        assert_eq!(body["success"], false);
        assert!(
            body["message"]
                .as_str()
                .unwrap_or_default()
                .contains("messageId"),
            "{body}"
        );
    }
}

#[tokio::test]
async fn page_properties_are_filled_from_context_page_and_never_invented() {
    let s = TestServer::start().await;
    let (src, key) = s.source("web").await;
    let rx = Receiver::start().await;
    s.webhook(&src, json!([rx.url()]), None).await;
    let with_page = json!({"userId": "u1", "name": "Pricing", "messageId": "m-page-1",
        "properties": {"title": "Own title", "plan": "pro"},
        "context": {"page": {"path": "/pricing", "referrer": "https://r.example/",
                             "title": "Context title", "url": "https://x.example/pricing"}}});
    let server_side = json!({"userId": "u1", "name": "Home", "messageId": "m-page-2",
        "properties": {"plan": "free"}});
    for call in [with_page, server_side] {
        assert_eq!(
            s.collect("/v1/page", Some(&key), call.to_string()).await.0,
            200
        );
    }
    let got = rx.wait_for(2, Duration::from_secs(10)).await;
    let bodies: Vec<Value> = got
        .iter()
        .map(|r| serde_json::from_slice(&r.body).expect("json"))
        .collect();
    let first = bodies
        .iter()
        .find(|b| b["messageId"] == "m-page-1")
        .expect("page 1");
    assert_eq!(
        first["properties"],
        json!({"path": "/pricing", "referrer": "https://r.example/",
               "title": "Own title", "url": "https://x.example/pricing", "plan": "pro"})
    );
    let second = bodies
        .iter()
        .find(|b| b["messageId"] == "m-page-2")
        .expect("page 2");
    assert_eq!(
        second["properties"],
        json!({"plan": "free"}),
        "nothing invented"
    );
}

#[tokio::test]
async fn a_name_resolving_to_a_blocked_address_gets_no_request() {
    // The machine's own name usually resolves to loopback or a private
    // address through /etc/hosts; it is not a literal, so it is saved, and
    // refused when the connection is made.
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|n| n.trim().to_owned())
        .unwrap_or_default();
    let policy = sluice_outbound::NetworkPolicy::default();
    let resolved: Vec<std::net::IpAddr> =
        std::net::ToSocketAddrs::to_socket_addrs(&(name.as_str(), 80))
            .map(|a| a.map(|s| s.ip()).collect())
            .unwrap_or_default();
    if name.is_empty() || resolved.is_empty() || resolved.iter().any(|ip| policy.check(*ip).is_ok())
    {
        eprintln!("skipped: host name {name:?} does not resolve only to blocked addresses");
        return;
    }
    let (_dir, s) = strict(&[]).await;
    let (src, key) = s.source("web").await;
    let rx = Receiver::start().await;
    let port = rx
        .url()
        .rsplit(':')
        .next()
        .map(str::to_owned)
        .expect("port");
    let url = format!("http://{name}:{port}");
    let (status, body) = create(&s, &src, json!([url])).await;
    assert_eq!(status, 201, "{body}");
    let call = json!({"userId": "u1", "event": "E", "messageId": "m-by-name"});
    assert_eq!(
        s.collect("/v1/track", Some(&key), call.to_string()).await.0,
        200
    );
    let dead = eventually(10, || async {
        let (_, body) = s
            .admin(Method::GET, "/deliveries?message_id=m-by-name", None)
            .await;
        let d = body["data"].get(0)?.clone();
        (d["state"] == "dead").then_some(d)
    })
    .await;
    assert_eq!(dead["attempts"], 1, "not retried");
    assert!(
        dead["last_error"]
            .as_str()
            .unwrap_or_default()
            .contains("blocked"),
        "{dead}"
    );
    assert!(rx.requests().is_empty(), "a request left the machine");
}
