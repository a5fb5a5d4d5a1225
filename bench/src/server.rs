//! The system under test: the real `sluice` binary as a child process, on a
//! free loopback port with a fresh temporary data dir, configured only
//! through `SLUICE_*` variables, plus the admin calls the scenarios need.
//! With the PostgreSQL backend each scenario gets a fresh schema, and a
//! second node can join the first one's schema.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use crate::resources::{self, Usage};

/// The admin token handed to the child; only ever used on loopback.
pub const ADMIN_TOKEN: &str = "sluice-bench-admin-token-0123456789";

/// Server settings a scenario may vary.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    pub synchronous: String,
    /// `delivery.timeout_ms`: how long an endpoint may take to answer.
    pub timeout_ms: u64,
    /// Where to keep server logs; `None`: a temporary file, removed at stop.
    pub log_dir: Option<PathBuf>,
    /// Extra `SLUICE_*` settings for one scenario (e.g. schema tracking off).
    pub env: Vec<(String, String)>,
    /// Where the server keeps its data.
    pub backend: Backend,
    /// A SQLite database copied in as the server's before it starts (a
    /// preloaded store); its open may take minutes, so readiness waits
    /// longer.
    pub seed: Option<PathBuf>,
}

/// The storage backend under test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// The embedded default, in the temporary data dir.
    Sqlite,
    /// A PostgreSQL server at this URL; one schema per scenario. With
    /// `kafka` (the brokers' bootstrap servers) the Kafka shape: accepted
    /// calls go through a topic of the scenario's own, PostgreSQL keeps
    /// configuration and retry state.
    Postgres { url: String, kafka: Option<String> },
}

/// A running `sluice serve`; terminated (SIGTERM, then SIGKILL) on drop.
pub struct Sluice {
    child: Child,
    pub addr: SocketAddr,
    pub http: reqwest::Client,
    data_dir: tempfile::TempDir,
    log_path: PathBuf,
    keep_log: bool,
    /// The PostgreSQL schema holding this node's tables, if any.
    schema: Option<String>,
    /// The first node of a schema drops it when stopped.
    owns_schema: bool,
    backend: Backend,
}

/// A source as the admin API returned it.
pub struct Source {
    pub id: String,
    /// `Basic base64(writeKey:)`, ready for the Authorization header.
    pub authorization: String,
}

impl Sluice {
    /// Starts the binary and waits (at most 30 s) until `/ready` answers 200.
    /// With PostgreSQL it gets a schema of its own.
    pub async fn start(binary: &Path, options: &ServerOptions) -> anyhow::Result<Sluice> {
        let schema = match options.backend {
            Backend::Sqlite => None,
            Backend::Postgres { .. } => Some(crate::pg::fresh_schema()),
        };
        Self::start_node(binary, options, schema, true).await
    }

    /// Another node on this node's database (PostgreSQL only).
    pub async fn start_peer(
        &self,
        binary: &Path,
        options: &ServerOptions,
    ) -> anyhow::Result<Sluice> {
        if self.schema.is_none() {
            bail!("a second node needs the PostgreSQL backend");
        }
        Self::start_node(binary, options, self.schema.clone(), false).await
    }

    async fn start_node(
        binary: &Path,
        options: &ServerOptions,
        schema: Option<String>,
        owns_schema: bool,
    ) -> anyhow::Result<Sluice> {
        let addr = free_port().context("finding a free loopback port")?;
        let data_dir = tempfile::Builder::new()
            .prefix("sluice-bench-")
            .tempdir()
            .context("creating the data dir")?;
        let log_path = match &options.log_dir {
            Some(dir) => {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("creating {}", dir.display()))?;
                let name = data_dir.path().file_name().unwrap_or_default();
                dir.join(name).with_extension("log")
            }
            None => data_dir.path().with_extension("log"),
        };
        let log = std::fs::File::create(&log_path)
            .with_context(|| format!("creating {}", log_path.display()))?;
        if let Some(seed) = &options.seed {
            let db = data_dir.path().join("db");
            std::fs::create_dir_all(&db).context("creating the db dir")?;
            std::fs::copy(seed, db.join("sluice.db"))
                .with_context(|| format!("copying {}", seed.display()))?;
        }
        let ready_within = Duration::from_secs(if options.seed.is_some() { 600 } else { 30 });
        let mut command = Command::new(binary);
        // Inherited SLUICE_* settings would make runs incomparable.
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("SLUICE_") {
                command.env_remove(key);
            }
        }
        let child = command
            .arg("serve")
            .env("SLUICE_LISTEN", addr.to_string())
            .env("SLUICE_DATA_DIR", data_dir.path().join("db"))
            .env("SLUICE_ADMIN_TOKEN", ADMIN_TOKEN)
            .env("SLUICE_LOG", "warn")
            // The bench's receivers listen on loopback, which the SSRF guard
            // refuses by default.
            .env(
                "SLUICE_DELIVERY__ALLOW_NETWORKS",
                r#"["127.0.0.0/8","::1/128"]"#,
            )
            .env("SLUICE_STORAGE__SYNCHRONOUS", &options.synchronous)
            .env(
                "SLUICE_DELIVERY__TIMEOUT_MS",
                options.timeout_ms.to_string(),
            )
            // Fast retries so the retry storm settles in seconds, not hours.
            .env("SLUICE_DELIVERY__BACKOFF_BASE_MS", "50")
            .env("SLUICE_DELIVERY__BACKOFF_CAP_MS", "500")
            .envs(storage_env(&options.backend, schema.as_deref()))
            .envs(options.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(10))
            .build()
            .context("building the admin client")?;
        let mut server = Sluice {
            child,
            addr,
            http,
            data_dir,
            log_path,
            keep_log: options.log_dir.is_some(),
            schema,
            owns_schema,
            backend: options.backend.clone(),
        };
        server.wait_ready(ready_within).await?;
        Ok(server)
    }

    async fn wait_ready(&mut self, within: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + within;
        let url = format!("http://{}/ready", self.addr);
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait()? {
                bail!("sluice exited at start ({status}); {}", self.log_tail());
            }
            if let Ok(r) = self.http.get(&url).send().await
                && r.status() == 200
            {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        bail!(
            "sluice not ready within {} s; {}",
            within.as_secs(),
            self.log_tail()
        )
    }

    /// The last lines of the server's log, for error messages.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log_path).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(10)..].join("\n");
        format!("server log ({}):\n{tail}", self.log_path.display())
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// CPU time and peak RSS of the server so far.
    pub fn usage(&self) -> anyhow::Result<Usage> {
        resources::usage(self.pid())
    }

    /// Bytes the store takes: every file under the data dir (database, WAL,
    /// shared memory), or with PostgreSQL every table and index of the
    /// node's schema.
    pub fn disk_bytes(&self) -> u64 {
        match (&self.backend, &self.schema) {
            (Backend::Postgres { url, .. }, Some(schema)) => tokio::task::block_in_place(|| {
                tokio::runtime::Handle::current().block_on(crate::pg::schema_bytes(url, schema))
            })
            .unwrap_or(0),
            _ => resources::dir_bytes(self.data_dir.path()),
        }
    }

    /// Waits, up to `limit`, for the store to come to rest: with SQLite,
    /// until its write-ahead log has been truncated (the store does that
    /// once it has had no commit for half a second, so this waits out the
    /// profile engine's catching up too). Returns the bytes the store then
    /// takes and whether it came to rest. PostgreSQL's figure needs no wait.
    pub async fn disk_bytes_at_rest(&self, limit: std::time::Duration) -> (u64, bool) {
        if matches!(self.backend, Backend::Postgres { .. }) {
            return (self.disk_bytes(), true);
        }
        let started = std::time::Instant::now();
        loop {
            let wal = resources::wal_bytes(self.data_dir.path());
            if wal < 4 << 20 {
                return (self.disk_bytes(), true);
            }
            if started.elapsed() > limit {
                return (self.disk_bytes(), false);
            }
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        }
    }

    /// The PostgreSQL schema holding this node's tables, if any.
    pub fn schema(&self) -> Option<&str> {
        self.schema.as_deref()
    }

    /// Whether this node runs the Kafka shape.
    pub fn kafka(&self) -> bool {
        matches!(self.backend, Backend::Postgres { kafka: Some(_), .. })
    }

    /// The PostgreSQL URL this node uses, if any.
    pub fn postgres_url(&self) -> Option<&str> {
        match &self.backend {
            Backend::Postgres { url, .. } => Some(url),
            Backend::Sqlite => None,
        }
    }

    /// The value of the sample `name` (its full name, without labels) on
    /// this node's `/metrics`; `None` when the node shows none.
    pub async fn metric(&self, name: &str) -> anyhow::Result<Option<f64>> {
        let url = format!("http://{}/metrics", self.addr);
        let text = self.http.get(&url).send().await?.text().await?;
        Ok(text
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok()))
    }

    pub async fn admin(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Value,
    ) -> anyhow::Result<Value> {
        let url = format!("http://{}/api/v1{path}", self.addr);
        let resp = self
            .http
            .request(method, &url)
            .bearer_auth(ADMIN_TOKEN)
            .json(&body)
            .send()
            .await
            .with_context(|| format!("admin request {path}"))?;
        let status = resp.status();
        let body: Value = resp.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            bail!("admin {path}: HTTP {status}: {body}");
        }
        Ok(body)
    }

    pub async fn create_source(&self, name: &str) -> anyhow::Result<Source> {
        let body = self
            .admin(reqwest::Method::POST, "/sources", json!({ "name": name }))
            .await?;
        let text = |k: &str| {
            body[k]
                .as_str()
                .map(str::to_owned)
                .with_context(|| format!("source response without {k}: {body}"))
        };
        let key = text("write_key")?;
        Ok(Source {
            id: text("id")?,
            authorization: format!("Basic {}", STANDARD.encode(format!("{key}:"))),
        })
    }

    /// Waits (at most 5 s) until this node accepts `source`'s write key: a
    /// node learns of a source created on another node at its next routing
    /// refresh. Probes with an empty batch, which stores nothing.
    pub async fn wait_for_key(&self, source: &Source) -> anyhow::Result<()> {
        let url = format!("http://{}/v1/batch", self.addr);
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let status = self
                .http
                .post(&url)
                .header("authorization", &source.authorization)
                .json(&json!({ "batch": [] }))
                .send()
                .await
                .map(|r| r.status().as_u16())
                .unwrap_or(0);
            if status != 0 && status != 401 {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "node {} still refuses the new source's key after 5 s",
                    self.addr
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Creates an enabled Webhooks destination for `source_id`.
    pub async fn create_webhook(
        &self,
        source_id: &str,
        name: &str,
        urls: &[String],
        secret: &str,
    ) -> anyhow::Result<String> {
        let body = json!({
            "name": name, "type": "Webhooks", "source_ids": [source_id],
            "settings": { "urls": urls, "sharedSecret": secret },
        });
        let created = self
            .admin(reqwest::Method::POST, "/destinations", body)
            .await?;
        created["id"]
            .as_str()
            .map(str::to_owned)
            .with_context(|| format!("destination response without id: {created}"))
    }

    /// Graceful stop: SIGTERM, up to 15 s for a clean exit, then SIGKILL.
    pub fn stop(mut self) -> anyhow::Result<()> {
        self.terminate()
    }

    fn terminate(&mut self) -> anyhow::Result<()> {
        if self.child.try_wait()?.is_some() {
            return Ok(());
        }
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(15);
        while Instant::now() < deadline {
            if self.child.try_wait()?.is_some() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.child.kill()?;
        self.child.wait()?;
        bail!("sluice did not stop within 15 s of SIGTERM; killed")
    }
}

impl Drop for Sluice {
    fn drop(&mut self) {
        if let Err(e) = self.terminate() {
            eprintln!("warning: {e}");
        }
        if !self.keep_log {
            let _ = std::fs::remove_file(&self.log_path);
        }
        if let (true, Backend::Postgres { url, .. }, Some(schema)) =
            (self.owns_schema, &self.backend, &self.schema)
            && let Ok(handle) = tokio::runtime::Handle::try_current()
        {
            tokio::task::block_in_place(|| handle.block_on(crate::pg::drop_schema(url, schema)));
        }
    }
}

/// The `SLUICE_STORAGE__*` settings of a backend.
fn storage_env(backend: &Backend, schema: Option<&str>) -> Vec<(String, String)> {
    match backend {
        Backend::Sqlite => Vec::new(),
        Backend::Postgres { url, kafka } => {
            let mut env = vec![
                ("SLUICE_STORAGE__BACKEND".to_owned(), "postgres".to_owned()),
                ("SLUICE_STORAGE__POSTGRES_URL".to_owned(), url.clone()),
            ];
            if let Some(schema) = schema {
                env.push((
                    "SLUICE_STORAGE__POSTGRES_SCHEMA".to_owned(),
                    schema.to_owned(),
                ));
            }
            if let (Some(bootstrap), Some(schema)) = (kafka, schema) {
                // A topic and group per scenario, like its schema; the test
                // broker is a single one.
                for (key, value) in [
                    ("BOOTSTRAP_SERVERS", bootstrap.as_str()),
                    ("TOPIC", schema),
                    ("DELIVERY_GROUP", schema),
                    ("PARTITIONS", "16"),
                    ("REPLICATION", "1"),
                ] {
                    env.push((format!("SLUICE_KAFKA__{key}"), value.to_owned()));
                }
            }
            env
        }
    }
}

/// A port the kernel just handed out; it is released for the child to bind.
fn free_port() -> std::io::Result<SocketAddr> {
    TcpListener::bind("127.0.0.1:0")?.local_addr()
}
