//! Delivery failures reach the process log: a `warn` line per failed attempt
//! naming destination, host, messageId, attempt and kind, and an `error`
//! line when the delivery is dead; none of the destination's secrets (URL
//! userinfo, path token, query token, header, signing secrets) appears.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sluice_testkit::{Receiver, Reply};

use crate::process::{TOKEN, basic, create_source, read_log, start_with_log_file};

const PASSWORD: &str = "pa55-in-userinfo";
const PATH_TOKEN: &str = "T0PATHs3cret";
const QUERY_TOKEN: &str = "q-s3cret-token";
const BEARER: &str = "Bearer hdr-s3cret-token";
const SHARED: &str = "shared-s3cret-value";
const WHSEC: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

#[tokio::test]
async fn failed_attempts_warn_and_dead_delivery_errors_without_secrets() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut sluice, log_path) = start_with_log_file(
        dir.path(),
        &[
            ("SLUICE_DELIVERY__RETRY_WINDOW_SECS", "1"),
            ("SLUICE_DELIVERY__BACKOFF_BASE_MS", "100"),
            ("SLUICE_DELIVERY__BACKOFF_CAP_MS", "200"),
        ],
    )
    .await;
    let http = reqwest::Client::new();
    let api = |path: &str| format!("{}/api/v1{path}", sluice.base);
    let (src, key) = create_source(&sluice.base, "web").await;
    let rx = Receiver::start().await;
    rx.set_default(Reply::status(503));
    let url = format!(
        "{}/{PATH_TOKEN}?token={QUERY_TOKEN}",
        rx.url()
            .replace("http://", &format!("http://user:{PASSWORD}@"))
    );
    let created: Value = http
        .post(api("/destinations"))
        .bearer_auth(TOKEN)
        .json(&json!({"name": "hook", "source_ids": [src], "settings": {
            "urls": [{"url": url, "headers": {"Authorization": BEARER}}],
            "sharedSecret": SHARED,
            "standardWebhooks": {"secret": WHSEC},
        }}))
        .send()
        .await
        .expect("create destination")
        .json()
        .await
        .expect("json");
    let dest = created["id"].as_str().expect("destination id").to_owned();

    let auth = basic(&key);
    let sent = http
        .post(format!("{}/v1/track", sluice.base))
        .header("authorization", auth)
        .body(json!({"userId": "u1", "event": "E", "messageId": "m-fail"}).to_string())
        .send()
        .await
        .expect("track");
    assert_eq!(sent.status(), 200);

    let deadline = Instant::now() + Duration::from_secs(20);
    let text = loop {
        let text = read_log(&log_path);
        if text.contains("delivery dead") || Instant::now() > deadline {
            break text;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let _ = sluice.child.kill().await;

    let warn = text
        .lines()
        .find(|l| l.contains("delivery attempt failed"))
        .unwrap_or_else(|| panic!("no warn line in:\n{text}"));
    assert!(warn.contains("WARN"), "{warn}");
    for part in [
        dest.as_str(),
        "host=127.0.0.1",
        "m-fail",
        "attempt=1",
        "kind=\"http_5xx\"",
    ] {
        assert!(warn.contains(part), "{part} missing: {warn}");
    }
    let dead = text
        .lines()
        .find(|l| l.contains("delivery dead"))
        .unwrap_or_else(|| panic!("no dead line in:\n{text}"));
    assert!(dead.contains("ERROR") && dead.contains("m-fail"), "{dead}");
    assert!(dead.contains(&dest), "{dead}");
    for secret in [
        PASSWORD,
        PATH_TOKEN,
        QUERY_TOKEN,
        BEARER,
        "hdr-s3cret-token",
        SHARED,
        WHSEC,
        "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    ] {
        assert!(!text.contains(secret), "{secret} found in the log:\n{text}");
    }
}
