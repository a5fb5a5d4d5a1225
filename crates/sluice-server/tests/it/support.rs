//! A real Sluice server on an ephemeral port, and a client for it.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use reqwest::{Client, Response};
use serde_json::{Value, json};
use sluice_server::{Announce, Config};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub const ADMIN_TOKEN: &str = "test-admin-token-0123456789";

pub struct Quiet;
impl Announce for Quiet {
    fn admin_token_generated(&self, _token: &str) {}
}

pub struct TestServer {
    pub base: String,
    pub http: Client,
    _dir: Option<tempfile::TempDir>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<(), sluice_server::ServerError>>>,
}

/// A default config for tests: fresh data dir, fixed token, fast delivery.
pub fn test_config(dir: &std::path::Path) -> Config {
    let mut config = Config {
        data_dir: dir.to_path_buf(),
        admin_token: Some(ADMIN_TOKEN.into()),
        ..Config::default()
    };
    config.storage.synchronous = "normal".into();
    config.delivery.timeout_ms = 1_000;
    config.delivery.backoff_base_ms = 50;
    config.delivery.backoff_cap_ms = 200;
    // Every receiver in these tests listens on loopback, which the SSRF
    // guard refuses by default: the one place these tests open it.
    config.delivery.allow_networks = vec!["127.0.0.0/8".into(), "::1/128".into()];
    config
}

impl TestServer {
    pub async fn start() -> TestServer {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = test_config(dir.path());
        let mut server = Self::start_with(config).await;
        server._dir = Some(dir);
        server
    }

    /// Starts on `config` (its `listen` is ignored: port 0 is used).
    pub async fn start_with(config: Config) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            sluice_server::run(
                config,
                listener,
                async {
                    let _ = stopped.await;
                },
                &Quiet,
            )
            .await
        });
        let server = TestServer {
            base: format!("http://{addr}"),
            http: Client::builder()
                .timeout(Duration::from_secs(10))
                .build()
                .expect("client"),
            _dir: None,
            stop: Some(stop),
            task: Some(task),
        };
        for _ in 0..200 {
            let ready = server.http.get(server.url("/ready")).send().await;
            if ready.is_ok_and(|r| r.status() == 200) {
                return server;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("server did not become ready");
    }

    /// A client of a server run elsewhere (a runtime of its own, say), at
    /// `base`; [`TestServer::stop`] then does nothing.
    #[cfg(feature = "postgres-tests")]
    pub fn client_of(base: String) -> TestServer {
        TestServer {
            base,
            http: Client::builder()
                .timeout(Duration::from_secs(10))
                .build()
                .expect("client"),
            _dir: None,
            stop: None,
            task: None,
        }
    }

    /// Stops the server gracefully and waits for `run` to return.
    pub async fn stop(mut self) -> Option<tempfile::TempDir> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.expect("join").expect("run returned an error");
        }
        self._dir.take()
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// One scrape of `/metrics`, as text (read values with [`metric`]).
    pub async fn metrics(&self) -> String {
        let resp = self.http.get(self.url("/metrics")).send().await;
        resp.expect("metrics").text().await.expect("metrics body")
    }

    pub async fn admin(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut req = self
            .http
            .request(method, self.url(&format!("/api/v1{path}")))
            .bearer_auth(ADMIN_TOKEN);
        if let Some(b) = body {
            req = req.json(&b);
        }
        read(req.send().await.expect("admin request")).await
    }

    /// Replaces a source's rules document (`PUT /sources/{id}/rules`).
    pub async fn put_rules(&self, source_id: &str, rules: Value) -> (u16, Value) {
        let path = format!("/sources/{source_id}/rules");
        self.admin(reqwest::Method::PUT, &path, Some(rules)).await
    }

    /// Creates a source; returns (id, write key).
    pub async fn source(&self, name: &str) -> (String, String) {
        let (status, body) = self
            .admin(
                reqwest::Method::POST,
                "/sources",
                Some(json!({"name": name})),
            )
            .await;
        assert_eq!(status, 201, "{body}");
        (
            body["id"].as_str().expect("id").to_owned(),
            body["write_key"].as_str().expect("write_key").to_owned(),
        )
    }

    /// Creates an enabled Webhooks destination; returns its id.
    pub async fn webhook(&self, source_id: &str, urls: Value, secret: Option<&str>) -> String {
        let body = json!({
            "name": "hook", "type": "Webhooks", "source_ids": [source_id],
            "settings": {"urls": urls, "sharedSecret": secret},
        });
        let (status, body) = self
            .admin(reqwest::Method::POST, "/destinations", Some(body))
            .await;
        assert_eq!(status, 201, "{body}");
        body["id"].as_str().expect("id").to_owned()
    }

    /// POSTs raw bytes to a collection path with Basic auth `key:`.
    pub async fn collect(
        &self,
        path: &str,
        key: Option<&str>,
        body: impl Into<reqwest::Body>,
    ) -> (u16, Value) {
        let mut req = self.http.post(self.url(path)).body(body);
        if let Some(k) = key {
            req = req.header("authorization", basic(k));
        }
        read(req.send().await.expect("collect request")).await
    }

    /// The stored events of a source, newest first.
    pub async fn events(&self, source_id: &str) -> Vec<Value> {
        let (status, body) = self
            .admin(
                reqwest::Method::GET,
                &format!("/sources/{source_id}/events?limit=500"),
                None,
            )
            .await;
        assert_eq!(status, 200, "{body}");
        body["data"].as_array().cloned().unwrap_or_default()
    }
}

/// The value of the first sample in `text` (a `/metrics` scrape) whose
/// line starts with `name`; panics, showing the scrape, when there is none.
pub fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in\n{text}"))
}

pub fn basic(key: &str) -> String {
    format!("Basic {}", STANDARD.encode(format!("{key}:")))
}

pub async fn read(resp: Response) -> (u16, Value) {
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap_or_default();
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, body)
}

/// Polls `check` until it returns Some, for up to `secs` seconds.
pub async fn eventually<T, F, Fut>(secs: u64, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "condition not met within {secs}s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
