//! The system under test: the real `sluice` binary as a child process, on a
//! free loopback port with a fresh temporary data dir, configured only
//! through `SLUICE_*` variables, plus the admin calls the scenarios need.

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
}

/// A running `sluice serve`; terminated (SIGTERM, then SIGKILL) on drop.
pub struct Sluice {
    child: Child,
    pub addr: SocketAddr,
    pub http: reqwest::Client,
    data_dir: tempfile::TempDir,
    log_path: PathBuf,
    keep_log: bool,
}

/// A source as the admin API returned it.
pub struct Source {
    pub id: String,
    /// `Basic base64(writeKey:)`, ready for the Authorization header.
    pub authorization: String,
}

impl Sluice {
    /// Starts the binary and waits (at most 30 s) until `/ready` answers 200.
    pub async fn start(binary: &Path, options: &ServerOptions) -> anyhow::Result<Sluice> {
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
        };
        server.wait_ready().await?;
        Ok(server)
    }

    async fn wait_ready(&mut self) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(30);
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
        bail!("sluice not ready within 30 s; {}", self.log_tail())
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

    /// Bytes of every file under the data dir (database, WAL, shared memory).
    pub fn disk_bytes(&self) -> u64 {
        resources::dir_bytes(self.data_dir.path())
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
    }
}

/// A port the kernel just handed out; it is released for the child to bind.
fn free_port() -> std::io::Result<SocketAddr> {
    TcpListener::bind("127.0.0.1:0")?.local_addr()
}
