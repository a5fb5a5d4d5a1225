//! The operator commands (`sluice import`, `tail`, `replay`, `sources`, …)
//! run as processes against the real server, also run as a process.

mod admin;
mod help;
mod import;
mod import_resume;
mod progress;
mod tail;
mod team;

use std::process::{Output, Stdio};

use serde_json::Value;
use tokio::process::Command;

use crate::process::TOKEN;

/// `sluice ARGS` pointed at `base` through the environment, as an operator
/// would set it up.
pub fn sluice(base: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sluice"));
    cmd.args(args)
        .env("SLUICE_URL", base)
        .env("SLUICE_ADMIN_TOKEN", TOKEN)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd
}

/// Runs to completion; returns (exit code, stdout, stderr).
pub async fn run(base: &str, args: &[&str]) -> (i32, String, String) {
    let out: Output = sluice(base, args).output().await.expect("run sluice");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs a command that must succeed and print one JSON document.
pub async fn run_json(base: &str, args: &[&str]) -> Value {
    let (code, stdout, stderr) = run(base, args).await;
    assert_eq!(code, 0, "sluice {args:?} failed: {stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// Creates a source through the CLI; returns (id, write key).
pub async fn source(base: &str, name: &str) -> (String, String) {
    let created = run_json(base, &["sources", "create", "--name", name]).await;
    (
        created["id"].as_str().expect("id").to_owned(),
        created["write_key"].as_str().expect("write_key").to_owned(),
    )
}

/// POSTs a batch to the collection API.
pub async fn send_batch(base: &str, key: &str, items: Value) {
    let resp = reqwest::Client::new()
        .post(format!("{base}/v1/batch"))
        .basic_auth(key, Some(""))
        .json(&serde_json::json!({ "batch": items }))
        .send()
        .await
        .expect("batch");
    assert_eq!(resp.status(), 200, "{:?}", resp.text().await);
}
