//! No credential in the log stream: a destination whose URL and headers carry
//! credentials is created, shown and delivered to, with debug logging on,
//! and none of its secrets appears in the server's log lines.

use std::time::Duration;

use serde_json::json;
use sluice_testkit::Receiver;

use crate::process::{TOKEN, basic, create_source, read_log, start_with_log_file};

const PASSWORD: &str = "hookpa55word-in-url";
const BEARER: &str = "Bearer tok-secret-0123456789";

#[tokio::test]
async fn destination_credentials_never_reach_the_log() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut sluice, log_path) = start_with_log_file(dir.path(), &[("SLUICE_LOG", "debug")]).await;
    let http = reqwest::Client::new();
    let api = |path: &str| format!("{}/api/v1{path}", sluice.base);
    let (src, key) = create_source(&sluice.base, "web").await;
    let rx = Receiver::start().await;
    let url = rx
        .url()
        .replace("http://", &format!("http://user:{PASSWORD}@"));
    let created = http
        .post(api("/destinations"))
        .bearer_auth(TOKEN)
        .json(&json!({"name": "hook", "source_ids": [src],
                      "settings": {"urls": [{"url": url, "headers": {"Authorization": BEARER}}]}}))
        .send()
        .await
        .expect("create destination");
    assert_eq!(created.status(), 201);
    let shown = created.text().await.unwrap_or_default();
    assert!(
        !shown.contains(PASSWORD) && !shown.contains(BEARER),
        "{shown}"
    );

    let auth = basic(&key);
    let sent = http
        .post(format!("{}/v1/track", sluice.base))
        .header("authorization", auth)
        .body(json!({"userId": "u1", "event": "E", "messageId": "m-log"}).to_string())
        .send()
        .await
        .expect("track");
    assert_eq!(sent.status(), 200);
    let got = rx.wait_for(1, Duration::from_secs(10)).await;
    assert_eq!(got[0].header("authorization"), Some(BEARER), "sent in full");
    // Give the delivery report a moment to be written and logged.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let _ = sluice.child.kill().await;

    let text = read_log(&log_path);
    assert!(!text.is_empty(), "debug logging produced nothing to check");
    for secret in [PASSWORD, BEARER, "tok-secret-0123456789"] {
        assert!(!text.contains(secret), "{secret} found in the log");
    }
}
