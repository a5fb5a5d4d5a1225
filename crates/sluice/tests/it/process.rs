//! Starting the real `sluice` binary on a free port.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};

pub const TOKEN: &str = "process-test-admin-token-000";

pub struct Sluice {
    pub child: Child,
    pub base: String,
}

/// The allow list that lets delivery reach loopback receivers.
pub const LOOPBACK: &str = r#"["127.0.0.0/8","::1/128"]"#;

pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// Starts `sluice serve` on `data_dir` and waits until it is ready. It
/// listens on a free port unless `extra_env` sets `SLUICE_LISTEN` (to
/// restart on the same address).
pub async fn start(data_dir: &Path, extra_env: &[(&str, &str)]) -> Sluice {
    start_with(data_dir, extra_env, None, Stdio::null()).await
}

/// [`start`], with the server's log lines (standard error) going to `log`.
pub async fn start_logging(data_dir: &Path, extra_env: &[(&str, &str)], log: Stdio) -> Sluice {
    start_with(data_dir, extra_env, None, log).await
}

/// [`start`], with the open-file limit (soft and hard) set to `nofile` for
/// the server process, as `ulimit -n` would.
pub async fn start_limited(
    data_dir: &Path,
    extra_env: &[(&str, &str)],
    nofile: Option<u64>,
) -> Sluice {
    start_with(data_dir, extra_env, nofile, Stdio::null()).await
}

async fn start_with(
    data_dir: &Path,
    extra_env: &[(&str, &str)],
    nofile: Option<u64>,
    log: Stdio,
) -> Sluice {
    let listen = extra_env
        .iter()
        .find(|(k, _)| *k == "SLUICE_LISTEN")
        .map(|(_, v)| (*v).to_owned())
        .unwrap_or_else(|| format!("127.0.0.1:{}", free_port()));
    let mut cmd = match nofile {
        None => Command::new(env!("CARGO_BIN_EXE_sluice")),
        Some(n) => {
            let mut sh = Command::new("sh");
            sh.arg("-c")
                .arg(format!("ulimit -n {n} && exec \"$0\" \"$@\""))
                .arg(env!("CARGO_BIN_EXE_sluice"));
            sh
        }
    };
    cmd.arg("serve")
        .env("SLUICE_LISTEN", &listen)
        .env("SLUICE_DATA_DIR", data_dir)
        .env("SLUICE_ADMIN_TOKEN", TOKEN)
        .env("SLUICE_LOG", "warn")
        // Receivers listen on loopback, which the SSRF guard refuses by default.
        .env("SLUICE_DELIVERY__ALLOW_NETWORKS", LOOPBACK)
        .stdout(Stdio::null())
        .stderr(log)
        .kill_on_drop(true);
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    let child = cmd.spawn().expect("spawn sluice");
    let s = Sluice {
        child,
        base: format!("http://{listen}"),
    };
    s.wait_ready().await;
    s
}

impl Sluice {
    pub async fn wait_ready(&self) {
        let http = reqwest::Client::new();
        for _ in 0..500 {
            let ready = http.get(format!("{}/ready", self.base)).send().await;
            if ready.is_ok_and(|r| r.status() == 200) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("sluice did not become ready");
    }

    pub fn pid(&self) -> u32 {
        self.child.id().expect("running")
    }
}

/// One admin API call under `/api/v1` with the test token; asserts a 2xx and
/// returns the JSON answer (`null` for an empty one).
pub async fn admin(
    base: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<serde_json::Value>,
) -> serde_json::Value {
    let mut req = reqwest::Client::new()
        .request(method, format!("{base}/api/v1{path}"))
        .bearer_auth(TOKEN);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = req.send().await.expect("admin request");
    assert!(resp.status().is_success(), "{path}: {}", resp.status());
    resp.json().await.unwrap_or(serde_json::Value::Null)
}

/// Every stored event of `source` as the debugger lists them (newest first),
/// paging through `before` until the end.
pub async fn all_events(base: &str, source: &str) -> Vec<serde_json::Value> {
    let http = reqwest::Client::new();
    let mut all = Vec::new();
    let mut before: Option<i64> = None;
    loop {
        let mut url = format!("{base}/api/v1/sources/{source}/events?limit=500");
        if let Some(b) = before {
            url.push_str(&format!("&before={b}"));
        }
        let page: serde_json::Value = http
            .get(url)
            .bearer_auth(TOKEN)
            .send()
            .await
            .expect("events request")
            .json()
            .await
            .expect("events json");
        all.extend(page["data"].as_array().cloned().unwrap_or_default());
        match page["next_before"].as_i64() {
            Some(b) => before = Some(b),
            None => return all,
        }
    }
}

/// The `Authorization` value a Segment library sends for `write_key`
/// (Basic, the key as username, no password).
pub fn basic(write_key: &str) -> String {
    use base64::Engine;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{write_key}:"))
    )
}

/// Creates a source named `name`; returns its id and write key.
pub async fn create_source(base: &str, name: &str) -> (String, String) {
    let v = admin(
        base,
        reqwest::Method::POST,
        "/sources",
        Some(serde_json::json!({ "name": name })),
    )
    .await;
    let field = |k: &str| v[k].as_str().map(str::to_owned).expect(k);
    (field("id"), field("write_key"))
}

/// Starts the server with its log lines going to `sluice.log` in `dir`
/// (data in `dir/data`); returns the server and the log's path.
pub async fn start_with_log_file(
    dir: &Path,
    extra_env: &[(&str, &str)],
) -> (Sluice, std::path::PathBuf) {
    let path = dir.join("sluice.log");
    let file = std::fs::File::create(&path).expect("log file");
    let sluice = start_logging(&dir.join("data"), extra_env, Stdio::from(file)).await;
    (sluice, path)
}

/// The log written so far.
pub fn read_log(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// POSTs `calls` to `/v1/batch` of `base` with `authorization`; returns
/// the status, or `None` when no answer came (the node is gone).
pub async fn post_batch(
    base: &str,
    authorization: &str,
    calls: Vec<serde_json::Value>,
) -> Option<u16> {
    let sent = reqwest::Client::new()
        .post(format!("{base}/v1/batch"))
        .header("authorization", authorization)
        .body(serde_json::json!({ "batch": calls }).to_string())
        .send()
        .await;
    sent.ok().map(|r| r.status().as_u16())
}
