//! Configuration layers, observed through `sluice config`: defaults, then the
//! file, then `SLUICE_*` variables, then validation. Variables are set on the
//! child process only.

use std::process::Output;

use tokio::process::Command;

async fn sluice_config(file: Option<&std::path::Path>, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sluice"));
    cmd.arg("config");
    if let Some(f) = file {
        cmd.arg("--config").arg(f);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().await.expect("run sluice config")
}

#[tokio::test]
async fn environment_overrides_file_which_overrides_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sluice.toml");
    std::fs::write(
        &file,
        "listen = \"127.0.0.1:9000\"\n[delivery]\ntimeout_ms = 2000\nbackoff_base_ms = 500\n",
    )
    .unwrap();
    let out = sluice_config(Some(&file), &[("SLUICE_DELIVERY__TIMEOUT_MS", "3000")]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("listen = \"127.0.0.1:9000\""),
        "file layer: {text}"
    );
    assert!(text.contains("timeout_ms = 3000"), "env layer: {text}");
    assert!(text.contains("backoff_base_ms = 500"), "file layer: {text}");
    assert!(
        text.contains("retry_window_secs = 14400"),
        "default layer: {text}"
    );
}

#[tokio::test]
async fn unknown_keys_and_invalid_values_are_refused() {
    let out = sluice_config(None, &[("SLUICE_DELIVERY__TIMOUT_MS", "1")]).await;
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("timout_ms"));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sluice.toml");
    std::fs::write(&file, "listne = \"127.0.0.1:1\"\n").unwrap();
    let out = sluice_config(Some(&file), &[]).await;
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("listne"));
    let out = sluice_config(None, &[("SLUICE_STORAGE__SYNCHRONOUS", "sometimes")]).await;
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("storage.synchronous"));
}

#[tokio::test]
async fn admin_token_is_masked_in_the_printed_config() {
    let out = sluice_config(None, &[("SLUICE_ADMIN_TOKEN", "a-very-secret-admin-token")]).await;
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("a-very-secret-admin-token"));
    assert!(text.contains("admin_token = \"(set)\""));
}

#[tokio::test]
async fn postgres_backend_needs_a_url_that_is_never_printed() {
    let out = sluice_config(None, &[("SLUICE_STORAGE__BACKEND", "postgres")]).await;
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("storage.postgres_url"));
    let url = "postgres://sluice:hunter2@db.internal/sluice";
    let out = sluice_config(
        None,
        &[
            ("SLUICE_STORAGE__BACKEND", "postgres"),
            ("SLUICE_STORAGE__POSTGRES_URL", url),
        ],
    )
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("hunter2"), "{text}");
    assert!(text.contains("backend = \"postgres\""));
}

/// Variables that are not Sluice settings (a harness's `SLUICE_BIN`, a typo
/// at the top level) do not stop start-up; `serve` warns about each.
#[tokio::test]
async fn unrelated_sluice_variables_are_ignored() {
    let out = sluice_config(
        None,
        &[("SLUICE_BIN", "/usr/bin/true"), ("SLUICE_LISTNE", "x")],
    )
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("listen = \"127.0.0.1:8088\""));
}

/// The operator commands' variables (`SLUICE_URL`, `SLUICE_WRITE_KEY`) live
/// in the same environment as the server's: `serve` neither fails on them
/// nor warns about them, and still warns about a real typo.
#[tokio::test]
async fn serve_does_not_warn_about_the_cli_variables() {
    let dir = tempfile::tempdir().unwrap();
    let port = crate::process::free_port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
        .arg("serve")
        .env("SLUICE_LISTEN", format!("127.0.0.1:{port}"))
        .env("SLUICE_DATA_DIR", dir.path())
        .env("SLUICE_ADMIN_TOKEN", crate::process::TOKEN)
        .env("SLUICE_LOG", "warn")
        .env("SLUICE_URL", "http://127.0.0.1:1")
        .env("SLUICE_WRITE_KEY", "k")
        .env("SLUICE_LISTNE", "x")
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let http = reqwest::Client::new();
    for _ in 0..500 {
        let ready = http
            .get(format!("http://127.0.0.1:{port}/ready"))
            .send()
            .await;
        if ready.is_ok_and(|r| r.status() == 200) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    child.start_kill().unwrap();
    let out = child.wait_with_output().await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("SLUICE_LISTNE"), "{stderr}");
    assert!(!stderr.contains("SLUICE_URL"), "{stderr}");
    assert!(!stderr.contains("SLUICE_WRITE_KEY"), "{stderr}");
}

#[tokio::test]
async fn alerts_secret_is_masked_in_the_printed_config() {
    let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    let out = sluice_config(
        None,
        &[
            (
                "SLUICE_ALERTS__URLS",
                "[\"https://ops.example.com/alerts\"]",
            ),
            ("SLUICE_ALERTS__SECRET", secret),
        ],
    )
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains(&secret[6..]), "{text}");
    assert!(text.contains("secret = \"(set)\""), "{text}");
    assert!(text.contains("https://ops.example.com/alerts"), "{text}");
}
