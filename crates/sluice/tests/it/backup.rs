//! `sluice backup` against a running server, then a restore: the copy
//! starts as a store with the sources, keys, events and the deliveries
//! that were still pending, and delivers them.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use serde_json::json;
use sluice_testkit::{Receiver, Reply};

use crate::process::{admin, all_events, basic, create_source, start};

const FAST_RETRIES: &[(&str, &str)] = &[
    ("SLUICE_DELIVERY__BACKOFF_BASE_MS", "100"),
    ("SLUICE_DELIVERY__BACKOFF_CAP_MS", "200"),
];

fn backup_command(data_dir: &std::path::Path, out: &std::path::Path) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .arg("backup")
        .arg(out)
        .env("SLUICE_DATA_DIR", data_dir)
        .env_remove("SLUICE_CONFIG")
        .output()
        .expect("run sluice backup")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_of_a_running_server_restores_and_delivers_what_was_pending() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (live, restored) = (dir.path().join("live"), dir.path().join("restored"));
    let mut sluice = start(&live, FAST_RETRIES).await;
    let (src, key) = create_source(&sluice.base, "web").await;
    let rx = Receiver::start().await;
    rx.set_default(Reply::status(503));
    admin(
        &sluice.base,
        reqwest::Method::POST,
        "/destinations",
        Some(json!({"name": "hook", "source_ids": [src],
                    "settings": {"urls": [{"url": rx.url()}], "sharedSecret": "s3cret"}})),
    )
    .await;
    let http = reqwest::Client::new();
    let ids: Vec<String> = (0..5).map(|i| format!("m-backup-{i}")).collect();
    for id in &ids {
        let r = http
            .post(format!("{}/v1/track", sluice.base))
            .header("authorization", basic(&key))
            .body(json!({"userId": "u1", "event": "E", "messageId": id}).to_string())
            .send()
            .await
            .expect("track");
        assert_eq!(r.status(), 200);
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while rx.requests().len() < ids.len() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // While it serves and retries.
    let out = dir.path().join("sluice-backup.db");
    let made = backup_command(&live, &out);
    assert!(made.status.success(), "{made:?}");
    let said = String::from_utf8_lossy(&made.stdout);
    assert!(said.starts_with("backed up "), "{said}");
    let again = backup_command(&live, &out);
    assert!(!again.status.success(), "an existing file is not replaced");
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("a backup never overwrites a file"),
        "{again:?}"
    );
    let _ = sluice.child.kill().await;

    // Restore: the copy as the database of a new data directory.
    std::fs::create_dir_all(&restored).expect("dir");
    std::fs::copy(&out, restored.join("sluice.db")).expect("restore");
    rx.set_default(Reply::status(200));
    let seen_before = rx.requests().len();
    let sluice = start(&restored, FAST_RETRIES).await;
    let stored: HashSet<String> = all_events(&sluice.base, &src)
        .await
        .iter()
        .filter_map(|e| e["message_id"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(stored, ids.iter().cloned().collect::<HashSet<_>>());
    let r = http
        .post(format!("{}/v1/track", sluice.base))
        .header("authorization", basic(&key))
        .body(json!({"userId": "u1", "event": "After"}).to_string())
        .send()
        .await
        .expect("track");
    assert_eq!(r.status(), 200, "the write key works on the restored store");

    // Deliveries pending at the backup are delivered (a send in flight then
    // waits out its lease first, up to a minute).
    let deadline = Instant::now() + Duration::from_secs(90);
    let delivered = loop {
        let got: HashSet<String> = rx.requests()[seen_before..]
            .iter()
            .filter_map(|r| {
                serde_json::from_slice::<serde_json::Value>(&r.body)
                    .ok()
                    .and_then(|b| b["messageId"].as_str().map(str::to_owned))
            })
            .collect();
        if ids.iter().all(|id| got.contains(id)) || Instant::now() > deadline {
            break got;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    for id in &ids {
        assert!(
            delivered.contains(id),
            "{id} delivered after restore: {delivered:?}"
        );
    }
}
