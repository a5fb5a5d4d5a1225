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

/// A destination whose every attempt fails writes at most its burst of warn
/// and error lines per window (10 each, then counted as `suppressed=N` on
/// the next line after the window, see `LogBudget`), while its attempt log
/// keeps every failure; the budget is per destination, so another failing
/// destination still gets its own lines.
#[tokio::test]
async fn a_flood_of_failures_is_rate_limited_per_destination() {
    const EVENTS: usize = 25;
    const BURST: usize = 10;
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
    let post = |path: &str, body: Value| http.post(api(path)).bearer_auth(TOKEN).json(&body).send();
    let (src, key) = create_source(&sluice.base, "web").await;
    let rx = Receiver::start().await;
    rx.set_default(Reply::status(503));
    let mut dests = Vec::new();
    for path in ["a", "b"] {
        let body = json!({"name": path, "source_ids": [src],
                          "settings": {"urls": [format!("{}/{path}", rx.url())]}});
        let d: Value = post("/destinations", body)
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        dests.push(d["id"].as_str().unwrap().to_owned());
    }
    let calls: Vec<Value> = (0..EVENTS)
        .map(|i| json!({"type": "track", "userId": "u", "event": "E", "messageId": format!("m-{i}")}))
        .collect();
    let sent = http
        .post(format!("{}/v1/batch", sluice.base))
        .basic_auth(&key, Some(""))
        .json(&json!({ "batch": calls }))
        .send()
        .await
        .unwrap();
    assert_eq!(sent.status(), 200);

    // Every delivery of both destinations dies (1 s retry window).
    let deadline = Instant::now() + Duration::from_secs(30);
    for d in &dests {
        loop {
            let page: Value = http
                .get(api(&format!(
                    "/destinations/{d}/deliveries?state=dead&limit=500"
                )))
                .bearer_auth(TOKEN)
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            if page["data"].as_array().map(Vec::len) == Some(EVENTS) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "deliveries never all died: {page}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    // The last lines are written right after the state changes.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let _ = sluice.child.kill().await;
    let text = read_log(&log_path);
    for d in &dests {
        let of = |what: &str| {
            text.lines()
                .filter(|l| l.contains(what) && l.contains(d.as_str()))
                .count()
        };
        assert_eq!(of("delivery attempt failed"), BURST, "{d}:\n{text}");
        assert_eq!(of("delivery dead"), BURST, "{d}:\n{text}");
    }
}

#[tokio::test]
async fn a_log_written_to_a_file_is_plain_text_without_colour_codes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut sluice, log_path) = start_with_log_file(dir.path(), &[("SLUICE_LOG", "info")]).await;
    let _ = sluice.child.kill().await;

    let text = read_log(&log_path);
    assert!(
        text.contains(" INFO ") && text.contains("sqlite store open"),
        "no start-up lines to check: {text}"
    );
    assert!(
        !text.contains('\u{1b}'),
        "terminal colour codes in a log file: {text:?}"
    );
}
