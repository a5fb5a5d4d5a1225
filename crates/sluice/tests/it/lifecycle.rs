//! Start-up and shutdown as an operator sees them.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::Command;

use crate::process::{free_port, start};

#[tokio::test]
async fn sigterm_stops_accepting_and_exits_zero() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = start(dir.path(), &[]).await;
    let status = Command::new("kill")
        .args(["-TERM", &s.pid().to_string()])
        .status()
        .await
        .unwrap();
    assert!(status.success());
    let exit = tokio::time::timeout(Duration::from_secs(15), s.child.wait())
        .await
        .expect("exits")
        .unwrap();
    assert!(exit.success(), "exit status {exit:?}");
    assert!(
        reqwest::get(format!("{}/health", s.base)).await.is_err(),
        "no longer accepting"
    );
}

/// Without a configured token one is generated, shown once on stderr, and
/// only its hash is kept: the second start shows nothing.
#[tokio::test]
async fn first_start_generates_and_shows_the_admin_token_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut shown = Vec::new();
    for _ in 0..2 {
        let port = free_port();
        let mut child = Command::new(env!("CARGO_BIN_EXE_sluice"))
            .arg("serve")
            .current_dir(dir.path())
            .env("SLUICE_LISTEN", format!("127.0.0.1:{port}"))
            .env_remove("SLUICE_ADMIN_TOKEN")
            .env_remove("SLUICE_DATA_DIR")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let base = format!("http://127.0.0.1:{port}");
        let mut ready = false;
        for _ in 0..500 {
            if reqwest::get(format!("{base}/ready"))
                .await
                .is_ok_and(|r| r.status() == 200)
            {
                ready = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(ready);
        Command::new("kill")
            .args(["-TERM", &child.id().unwrap().to_string()])
            .status()
            .await
            .unwrap();
        child.wait().await.unwrap();
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .await
            .unwrap();
        let token = err
            .lines()
            .skip_while(|l| !l.contains("Generated admin token"))
            .map(str::trim)
            .find(|l| l.len() == 40 && l.chars().all(|c| c.is_ascii_alphanumeric()))
            .map(str::to_owned);
        shown.push(token);
    }
    assert!(shown[0].is_some(), "first start shows the token");
    assert_eq!(shown[1], None, "second start does not");
    assert!(
        dir.path().join("sluice-data/sluice.db").exists(),
        "default data dir is ./sluice-data"
    );
}

#[tokio::test]
async fn a_start_that_fails_sends_nothing_and_leaves_the_backlog_whole() {
    use crate::process::{LOOPBACK, TOKEN, admin, basic, create_source, post_batch};
    use serde_json::json;
    use sluice_testkit::{Receiver, Reply};

    let dir = tempfile::tempdir().unwrap();
    let rx = Receiver::start().await;
    rx.set_default(Reply::status(503));
    let backoff = [
        ("SLUICE_DELIVERY__BACKOFF_BASE_MS", "50"),
        ("SLUICE_DELIVERY__BACKOFF_CAP_MS", "100"),
    ];
    let mut s = start(dir.path(), &backoff).await;
    let (src, key) = create_source(&s.base, "web").await;
    admin(
        &s.base,
        reqwest::Method::POST,
        "/destinations",
        Some(json!({"name": "hook", "source_ids": [src], "settings": {"urls": [rx.url()]}})),
    )
    .await;
    let calls = (0..5)
        .map(|i| json!({"type": "track", "userId": "u", "event": "E", "messageId": format!("b-{i}")}))
        .collect();
    assert_eq!(post_batch(&s.base, &basic(&key), calls).await, Some(200));
    rx.wait_for(5, Duration::from_secs(10)).await;
    let _ = Command::new("kill")
        .args(["-TERM", &s.pid().to_string()])
        .status()
        .await;
    let _ = tokio::time::timeout(Duration::from_secs(15), s.child.wait()).await;
    let before = rx.requests().len();

    // The metrics address is taken: the start fails, after the store and
    // its backlog of retries were opened.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let metrics = taken.local_addr().unwrap().to_string();
    let mut failing = Command::new(env!("CARGO_BIN_EXE_sluice"));
    failing
        .arg("serve")
        .env("SLUICE_LISTEN", format!("127.0.0.1:{}", free_port()))
        .env("SLUICE_DATA_DIR", dir.path())
        .env("SLUICE_ADMIN_TOKEN", TOKEN)
        .env("SLUICE_LOG", "warn")
        .env("SLUICE_DELIVERY__ALLOW_NETWORKS", LOOPBACK)
        .env("SLUICE_METRICS__LISTEN", &metrics)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    for (k, v) in backoff {
        failing.env(k, v);
    }
    let exit = tokio::time::timeout(Duration::from_secs(15), failing.status())
        .await
        .expect("exits")
        .unwrap();
    assert!(!exit.success(), "started with its metrics address taken");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        rx.requests().len(),
        before,
        "a start that failed sent part of the backlog"
    );
}
