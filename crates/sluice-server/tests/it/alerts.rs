//! Operational alerts: one signed alert when a destination starts failing,
//! one when it recovers, none per failed attempt (docs/alerts.md).

use std::time::Duration;

use serde_json::{Value, json};
use sluice_server::Config;
use sluice_signing::standard;
use sluice_testkit::{Receiver, RecordedRequest, Reply};

use crate::dashboard::session_cookie;
use crate::support::{TestServer, eventually, test_config};

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

fn alerting_config(dir: &std::path::Path, alerts: &Receiver) -> Config {
    let mut config = test_config(dir);
    config.alerts.urls = vec![alerts.url()];
    config.alerts.secret = Some(SECRET.into());
    config.alerts.window_secs = 2;
    config.alerts.min_attempts = 3;
    config.alerts.min_success_rate = 0.5;
    config.alerts.check_interval_ms = 100;
    config
}

/// Checks the Standard Webhooks headers against the secret and returns the
/// parsed body.
fn verified(request: &RecordedRequest) -> Value {
    let id = request.header("webhook-id").expect("webhook-id");
    let ts: i64 = request
        .header("webhook-timestamp")
        .and_then(|t| t.parse().ok())
        .expect("webhook-timestamp");
    let signature = request
        .header("webhook-signature")
        .expect("webhook-signature");
    let key = standard::secret_key(SECRET).expect("secret");
    assert!(
        standard::verify(&key, id, ts, &request.body, signature),
        "signature does not verify"
    );
    assert!(
        (chrono::Utc::now().timestamp() - ts).abs() < 60,
        "fresh timestamp"
    );
    serde_json::from_slice(&request.body).expect("JSON body")
}

async fn send_events(s: &TestServer, key: &str, prefix: &str, n: usize) {
    let batch: Vec<Value> = (0..n)
        .map(|i| json!({"type": "track", "userId": "u", "event": "E", "messageId": format!("{prefix}-{i}")}))
        .collect();
    let body = json!({"batch": batch}).to_string();
    assert_eq!(s.collect("/v1/batch", Some(key), body).await.0, 200);
}

#[tokio::test]
async fn alert_once_when_failing_and_once_on_recovery_not_per_attempt() {
    let dir = tempfile::tempdir().expect("tempdir");
    let alerts = Receiver::start().await;
    let s = TestServer::start_with(alerting_config(dir.path(), &alerts)).await;
    let (src, key) = s.source("web").await;
    let endpoint = Receiver::start().await;
    endpoint.set_default(Reply::status(503));
    let dest = s.webhook(&src, json!([endpoint.url()]), None).await;
    send_events(&s, &key, "fail", 5).await;

    let first = alerts.wait_for(1, Duration::from_secs(10)).await;
    let failing = verified(&first[0]);
    assert_eq!(failing["type"], "destination.failing", "{failing}");
    assert_eq!(failing["data"]["destination_id"], dest.as_str());
    assert_eq!(failing["data"]["destination_name"], "hook");
    assert_eq!(failing["data"]["reason"], "success_rate");
    assert_eq!(failing["data"]["success_rate"], 0.0);
    assert!(failing["timestamp"].is_string());

    // Many more failed attempts: still one alert.
    eventually(15, || async {
        (endpoint.requests().len() >= 25).then_some(())
    })
    .await;
    assert_eq!(alerts.requests().len(), 1, "no alert per failed attempt");
    let cookie = session_cookie(&s).await;
    let page = |path: String| {
        let (s, cookie) = (&s, cookie.clone());
        async move {
            let res = s
                .http
                .get(s.url(&path))
                .header("cookie", cookie)
                .send()
                .await;
            res.expect("page").text().await.expect("page text")
        }
    };
    for path in ["/".to_owned(), format!("/destinations/{dest}")] {
        let html = page(path.clone()).await;
        assert!(html.contains("Failing: "), "{path} shows the incident");
        assert!(html.contains("most deliveries are failing"), "{path}");
    }

    endpoint.set_default(Reply::status(200));
    let all = alerts.wait_for(2, Duration::from_secs(15)).await;
    let recovered = verified(&all[1]);
    assert_eq!(recovered["type"], "destination.recovered", "{recovered}");
    assert_eq!(recovered["data"]["destination_id"], dest.as_str());
    assert_eq!(
        recovered["data"]["incident_id"], failing["data"]["incident_id"],
        "the recovery names the incident it ends"
    );
    assert_ne!(all[0].header("webhook-id"), all[1].header("webhook-id"));
    assert!(
        !page("/".to_owned()).await.contains("Failing: "),
        "notice gone"
    );

    // Healthy traffic afterwards sends nothing more.
    send_events(&s, &key, "ok", 5).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(
        alerts.requests().len(),
        2,
        "exactly one alert and one recovery"
    );
    s.stop().await;
}

#[tokio::test]
async fn switching_a_failing_destination_off_closes_its_incident_without_an_alert() {
    let dir = tempfile::tempdir().expect("tempdir");
    let alerts = Receiver::start().await;
    let s = TestServer::start_with(alerting_config(dir.path(), &alerts)).await;
    let (src, key) = s.source("web").await;
    let endpoint = Receiver::start().await;
    endpoint.set_default(Reply::status(503));
    let dest = s.webhook(&src, json!([endpoint.url()]), None).await;
    send_events(&s, &key, "fail", 3).await;
    alerts.wait_for(1, Duration::from_secs(10)).await;
    let cookie = session_cookie(&s).await;
    let overview = || async {
        let res = s
            .http
            .get(s.url("/"))
            .header("cookie", &cookie)
            .send()
            .await;
        res.expect("page").text().await.expect("page text")
    };
    assert!(overview().await.contains("Failing: "));
    let path = format!("/destinations/{dest}");
    let off = Some(json!({"enabled": false}));
    assert_eq!(s.admin(reqwest::Method::PATCH, &path, off).await.0, 200);
    eventually(5, || async {
        (!overview().await.contains("Failing: ")).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        alerts.requests().len(),
        1,
        "no recovery claimed for a switched-off destination"
    );
    s.stop().await;
}

#[tokio::test]
async fn alert_once_for_dead_deliveries_then_recovery() {
    let dir = tempfile::tempdir().expect("tempdir");
    let alerts = Receiver::start().await;
    let mut config = alerting_config(dir.path(), &alerts);
    // Only the dead deliveries can open this incident.
    config.alerts.min_attempts = 1000;
    let s = TestServer::start_with(config).await;
    let (src, key) = s.source("web").await;
    let endpoint = Receiver::start().await;
    endpoint.set_default(Reply::status(400));
    s.webhook(&src, json!([endpoint.url()]), None).await;
    send_events(&s, &key, "bad", 4).await;
    endpoint.wait_for(4, Duration::from_secs(10)).await;
    let first = alerts.wait_for(1, Duration::from_secs(10)).await;
    let dead = verified(&first[0]);
    assert_eq!(dead["type"], "delivery.dead", "{dead}");
    assert_eq!(dead["data"]["reason"], "delivery_dead");
    assert!(
        dead["data"]["message_id"]
            .as_str()
            .is_some_and(|m| m.starts_with("bad-"))
    );
    assert!(
        dead["data"]["error"]
            .as_str()
            .is_some_and(|e| e.contains("400")),
        "{dead}"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        alerts.requests().len(),
        1,
        "one alert for four dead deliveries"
    );

    endpoint.set_default(Reply::status(200));
    send_events(&s, &key, "good", 1).await;
    let all = alerts.wait_for(2, Duration::from_secs(10)).await;
    let recovered = verified(&all[1]);
    assert_eq!(recovered["type"], "destination.recovered");
    assert_eq!(recovered["data"]["dead"], 4);
    s.stop().await;
}

#[tokio::test]
async fn alert_failures_are_retried_until_the_receiver_takes_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let alerts = Receiver::start().await;
    alerts.push(Reply::status(500));
    alerts.push(Reply::status(500));
    let mut config = alerting_config(dir.path(), &alerts);
    config.alerts.retry_base_ms = 50;
    let s = TestServer::start_with(config).await;
    let (src, key) = s.source("web").await;
    let endpoint = Receiver::start().await;
    endpoint.set_default(Reply::status(503));
    s.webhook(&src, json!([endpoint.url()]), None).await;
    send_events(&s, &key, "fail", 3).await;
    let tries = alerts.wait_for(3, Duration::from_secs(10)).await;
    let ids: Vec<_> = tries.iter().map(|r| r.header("webhook-id")).collect();
    assert!(
        ids.iter().all(|id| *id == ids[0]),
        "one webhook-id across retries"
    );
    assert_eq!(verified(&tries[2])["type"], "destination.failing");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(alerts.requests().len(), 3, "no try after the one taken");
    s.stop().await;
}

#[tokio::test]
async fn alert_once_when_the_backlog_passes_its_limit_then_recovery() {
    let dir = tempfile::tempdir().expect("tempdir");
    let alerts = Receiver::start().await;
    let mut config = alerting_config(dir.path(), &alerts);
    config.alerts.min_attempts = 1000;
    config.alerts.backlog_limit = 3;
    let s = TestServer::start_with(config).await;
    let (src, key) = s.source("web").await;
    let endpoint = Receiver::start().await;
    endpoint.set_default(Reply::status(503));
    s.webhook(&src, json!([endpoint.url()]), None).await;
    send_events(&s, &key, "slow", 8).await;
    let first = alerts.wait_for(1, Duration::from_secs(10)).await;
    let failing = verified(&first[0]);
    assert_eq!(failing["type"], "destination.failing", "{failing}");
    assert_eq!(failing["data"]["reason"], "backlog");
    assert_eq!(
        failing["data"]["pending"], 4,
        "counted up to one over the limit"
    );
    endpoint.set_default(Reply::status(200));
    let all = alerts.wait_for(2, Duration::from_secs(15)).await;
    assert_eq!(verified(&all[1])["type"], "destination.recovered");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(alerts.requests().len(), 2);
    s.stop().await;
}

#[test]
fn alerts_config_needs_a_valid_secret_and_never_shows_it() {
    let mut config = Config::default();
    config.alerts.urls = vec!["https://ops.example.com/hooks/T0K3N".into()];
    let err = config.validate().expect_err("secret required").to_string();
    assert!(err.contains("alerts.secret"), "{err}");
    config.alerts.secret = Some("whsec_short".into());
    let err = config.validate().expect_err("bad secret").to_string();
    assert!(
        err.contains("alerts.secret") && !err.contains("whsec_short"),
        "{err}"
    );
    config.alerts.secret = Some(SECRET.into());
    config.validate().expect("valid");
    let shown = format!("{config:?}");
    assert!(!shown.contains(&SECRET[6..]), "{shown}");
    assert!(!shown.contains("T0K3N"), "{shown}");
    config.alerts.urls = vec!["https://a.example".into(); 6];
    assert!(config.validate().is_err(), "at most five URLs");
    config.alerts.urls = vec!["ftp://a.example/x".into()];
    assert!(config.validate().is_err(), "http(s) only");
}
