//! `sluice tail`: stored history first, then events as they arrive, one
//! JSON document per line when not on a terminal.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::ChildStdout;

use super::{send_batch, sluice, source};
use crate::process::start;

async fn next_event(lines: &mut Lines<BufReader<ChildStdout>>) -> Value {
    let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
        .await
        .expect("an event within 10 s")
        .unwrap()
        .expect("tail is still running");
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
}

fn track(id: &str) -> Value {
    json!({"type": "track", "userId": "u", "event": "E", "messageId": id})
}

#[tokio::test]
async fn tail_prints_recent_history_then_follows_new_events_in_order() {
    let data = tempfile::tempdir().unwrap();
    let server = start(data.path(), &[]).await;
    let base = &server.base;
    let (src, key) = source(base, "web").await;
    send_batch(
        base,
        &key,
        json!([track("old-1"), track("old-2"), track("old-3")]),
    )
    .await;

    let mut child = sluice(
        base,
        &["tail", "--source", &src, "-n", "2", "--interval-ms", "50"],
    )
    .spawn()
    .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert_eq!(next_event(&mut lines).await["messageId"], "old-2");
    assert_eq!(next_event(&mut lines).await["messageId"], "old-3");

    // More than one page (500) arrives between two polls: nothing is skipped.
    let burst: Vec<Value> = (0..1200).map(|i| track(&format!("new-{i}"))).collect();
    send_batch(base, &key, json!(burst)).await;
    send_batch(base, &key, json!([track("last")])).await;
    for i in 0..1200 {
        let event = next_event(&mut lines).await;
        assert_eq!(event["messageId"], format!("new-{i}"));
        assert_eq!(
            event["receivedAt"].as_str().map(str::len),
            Some(24),
            "stored form"
        );
    }
    assert_eq!(next_event(&mut lines).await["messageId"], "last");
    child.kill().await.unwrap();
}

#[tokio::test]
async fn tail_of_an_unknown_source_fails_with_the_api_message() {
    let data = tempfile::tempdir().unwrap();
    let server = start(data.path(), &[]).await;
    let (code, _, stderr) = super::run(&server.base, &["tail", "--source", "src_nope"]).await;
    assert_eq!(code, 1);
    assert!(stderr.contains("source not found"), "{stderr}");
}

#[tokio::test]
async fn tail_waits_out_a_server_restart_and_goes_on() {
    let data = tempfile::tempdir().unwrap();
    let mut server = start(data.path(), &[]).await;
    let base = server.base.clone();
    let listen = base.trim_start_matches("http://").to_owned();
    let (src, key) = source(&base, "web").await;
    send_batch(&base, &key, json!([track("history")])).await;
    let mut child = sluice(
        &base,
        &["tail", "--source", &src, "-n", "1", "--interval-ms", "50"],
    )
    .spawn()
    .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // Once history is printed, tail is following.
    assert_eq!(next_event(&mut lines).await["messageId"], "history");
    send_batch(&base, &key, json!([track("before")])).await;
    assert_eq!(next_event(&mut lines).await["messageId"], "before");

    server.child.start_kill().unwrap();
    server.child.wait().await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await; // tail polls a dead server
    let restarted = start(data.path(), &[("SLUICE_LISTEN", listen.as_str())]).await;
    assert_eq!(restarted.base, base, "same address");
    send_batch(&base, &key, json!([track("after")])).await;
    assert_eq!(next_event(&mut lines).await["messageId"], "after");
    child.kill().await.unwrap();
}
