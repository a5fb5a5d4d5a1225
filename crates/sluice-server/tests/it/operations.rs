//! Operating the service: configuration as code, proxies, metrics.

use reqwest::Method;
use serde_json::json;

use crate::support::{TestServer, basic, metric, test_config};

const BOOTSTRAP: &str = r#"
[[sources]]
id = "web"
name = "Website"
write_key = "bootstrap-write-key-0123456789"

[[destinations]]
id = "hooks"
name = "Hooks"
sources = ["web"]
shared_secret = "bootstrap-secret"

[[destinations.urls]]
url = "https://hooks.example/in"
headers = { "X-Team" = "data" }
"#;

#[tokio::test]
async fn bootstrap_file_is_applied_idempotently_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bootstrap.toml");
    std::fs::write(&file, BOOTSTRAP).unwrap();
    let mut config = test_config(dir.path());
    config.bootstrap = Some(file.clone());

    for round in 0..2 {
        let s = TestServer::start_with(config.clone()).await;
        let (_, sources) = s.admin(Method::GET, "/sources", None).await;
        assert_eq!(
            sources["data"].as_array().unwrap().len(),
            1,
            "round {round}"
        );
        let (_, d) = s.admin(Method::GET, "/destinations/hooks", None).await;
        assert_eq!(d["source_ids"], json!(["web"]));
        assert_eq!(d["settings"]["urls"][0]["headers"]["X-Team"], json!("data"));
        let body = json!({"userId": "u", "event": "e"}).to_string();
        let (status, _) = s
            .collect("/v1/track", Some("bootstrap-write-key-0123456789"), body)
            .await;
        assert_eq!(status, 200);
        s.stop().await;
    }

    // Declared values win on the next start.
    std::fs::write(
        &file,
        BOOTSTRAP.replace("name = \"Hooks\"", "name = \"Renamed\""),
    )
    .unwrap();
    let s = TestServer::start_with(config.clone()).await;
    let (_, d) = s.admin(Method::GET, "/destinations/hooks", None).await;
    assert_eq!(d["name"], json!("Renamed"));
    s.stop().await;
    // Invalid declarations stop start-up, naming what is wrong; names are
    // held to the admin API's rules too.
    for (from, to, named) in [
        (
            "https://hooks.example/in",
            "hooks.example/in",
            "settings.urls[0].url",
        ),
        (
            "name = \"Website\"",
            "name = \"Web\\u001b[2J\"",
            "source web: name: must not contain control characters",
        ),
    ] {
        std::fs::write(&file, BOOTSTRAP.replace(from, to)).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let err = sluice_server::run(
            config.clone(),
            listener,
            async {},
            &sluice_server::StderrAnnounce,
        )
        .await
        .expect_err("an invalid declaration stops start-up");
        assert!(err.to_string().contains(named), "{err}");
    }
}

#[tokio::test]
async fn forwarded_for_is_used_only_when_trusted() {
    for trusted in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let mut config = test_config(dir.path());
        config.trust_forwarded_for = trusted;
        let s = TestServer::start_with(config).await;
        let (src, key) = s.source("web").await;
        let r = s
            .http
            .post(s.url("/v1/track"))
            .header("authorization", basic(&key))
            .header("x-forwarded-for", "203.0.113.9, 10.0.0.1")
            .body(json!({"userId": "u", "event": "e"}).to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let events = s.events(&src).await;
        let want = if trusted { "203.0.113.9" } else { "127.0.0.1" };
        assert_eq!(
            events[0]["event"]["context"]["ip"],
            json!(want),
            "trusted={trusted}"
        );
    }
}

#[tokio::test]
async fn metrics_count_requests_events_and_commits() {
    let s = TestServer::start().await;
    let (_, key) = s.source("web").await;
    let batch = json!({"batch": [
        {"type": "track", "userId": "u", "event": "a"},
        {"type": "track", "userId": "u", "event": "b"},
    ]});
    assert_eq!(
        s.collect("/v1/batch", Some(&key), batch.to_string())
            .await
            .0,
        200
    );
    assert_eq!(s.collect("/v1/batch", Some(&key), "{oops").await.0, 400);
    let text = s.metrics().await;
    let value = |name: &str| metric(&text, name);
    assert_eq!(value("sluice_events_accepted_total"), 2.0);
    assert_eq!(value("sluice_events_rejected_total"), 1.0);
    assert_eq!(value("sluice_commit_duration_seconds_count"), 1.0);
    assert_eq!(
        value("sluice_http_requests_total{path=\"/v1/{kind}\",status=\"200\"}"),
        1.0
    );
    assert_eq!(
        value("sluice_http_requests_total{path=\"/v1/{kind}\",status=\"400\"}"),
        1.0
    );
}

/// The "Example file" block of docs/configuration.md, as written there.
fn documented_example_config() -> String {
    let doc = include_str!("../../../../docs/configuration.md");
    let after = doc
        .split("## Example file")
        .nth(1)
        .expect("configuration.md has an example file");
    let block = after.split("```toml\n").nth(1).expect("a toml block");
    block
        .split("```")
        .next()
        .expect("a closed block")
        .to_owned()
}

#[tokio::test]
async fn the_documented_example_file_and_long_timeouts_start_and_deliver() {
    let receiver = sluice_testkit::Receiver::start().await;
    let example = documented_example_config();
    assert!(
        example.contains("concurrency_per_destination = 32"),
        "{example}"
    );
    let variants = [
        example.clone(),
        example.replace("timeout_ms = 5000", "timeout_ms = 30000"),
        example.replace(
            "concurrency_per_destination = 32",
            "concurrency_per_destination = 1",
        ),
    ];
    for (i, toml) in variants.iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        // Only what names this machine changes: the data dir and the
        // bootstrap file the example points at.
        let toml: String = toml
            .lines()
            .filter(|l| !l.starts_with("bootstrap") && !l.starts_with("data_dir"))
            .map(|l| format!("{l}\n"))
            .collect();
        let file = dir.path().join("sluice.toml");
        std::fs::write(&file, toml).unwrap();
        let env = figment::providers::Env::prefixed("SLUICE_EXAMPLE_TEST_UNSET_");
        let mut config = sluice_server::config::Config::load_from(Some(&file), env)
            .unwrap_or_else(|e| panic!("variant {i}: {e}"));
        config.data_dir = dir.path().join("data");
        config.admin_token = test_config(dir.path()).admin_token;
        config.delivery.allow_networks = vec!["127.0.0.0/8".into()];
        let s = TestServer::start_with(config).await;
        let (src, key) = s.source("web").await;
        s.webhook(&src, json!([receiver.url()]), None).await;
        let body = json!({"userId": "u", "event": format!("variant {i}")}).to_string();
        assert_eq!(s.collect("/v1/track", Some(&key), body).await.0, 200);
        let got = receiver
            .wait_for(i + 1, std::time::Duration::from_secs(10))
            .await;
        assert!(
            got[i].text().contains(&format!("\"variant {i}\"")),
            "{}",
            got[i].text()
        );
        s.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_hangs_gets_a_503_within_the_storage_timeout_not_a_hang() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = test_config(dir.path());
    config.storage.timeout_ms = 300;
    let s = TestServer::start_with(config).await;
    let (_, key) = s.source("web").await;
    let cookie = crate::dashboard::session_cookie(&s).await;
    let form = crate::dashboard::client()
        .get(s.url("/sources"))
        .header(reqwest::header::COOKIE, &cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let csrf = crate::dashboard::hidden_csrf(&form);
    // Another process holds the database's write lock: the writer waits
    // (up to its 5 s busy timeout), as it would on a frozen database.
    let db = dir.path().join("sluice.db");
    let (locked, release) = (
        std::sync::mpsc::channel::<()>(),
        std::sync::mpsc::channel::<()>(),
    );
    let (locked_tx, locked_rx) = locked;
    let (release_tx, release_rx) = release;
    let holder = std::thread::spawn(move || {
        let conn = rusqlite::Connection::open(db).unwrap();
        conn.execute_batch("BEGIN EXCLUSIVE").unwrap();
        locked_tx.send(()).unwrap();
        release_rx.recv().unwrap();
        conn.execute_batch("COMMIT").unwrap();
    });
    locked_rx.recv().unwrap();

    let started = std::time::Instant::now();
    let body = json!({"userId": "u", "event": "e"}).to_string();
    let r = s
        .http
        .post(s.url("/v1/track"))
        .header("authorization", basic(&key))
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 503);
    assert!(r.headers().contains_key("retry-after"));
    let answer: serde_json::Value = r.json().await.unwrap();
    assert_eq!(answer["code"], json!("unavailable"));
    let (status, answer) = s
        .admin(Method::POST, "/sources", Some(json!({"name": "late"})))
        .await;
    assert_eq!(
        (status, answer["code"].clone()),
        (503, json!("unavailable"))
    );
    // A dashboard form that writes gets the error page, not a hang.
    let page = crate::dashboard::client()
        .post(s.url("/sources"))
        .header(reqwest::header::COOKIE, &cookie)
        .form(&[("csrf", csrf.as_str()), ("name", "from the dashboard")])
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 503);
    assert!(
        page.text()
            .await
            .unwrap()
            .contains("<code>unavailable</code>")
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(4),
        "answered within the timeout, not the lock's 5 s: {:?}",
        started.elapsed()
    );

    release_tx.send(()).unwrap();
    holder.join().unwrap();
    let (status, _) = s.collect("/v1/track", Some(&key), body).await;
    assert_eq!(status, 200, "the store answers again");
    s.stop().await;
}
