//! `sluice sources|destinations|deliveries|replay` against the real server.

use std::time::Duration;

use serde_json::{Value, json};
use sluice_testkit::{Receiver, Reply};

use super::{run, run_json, send_batch, source};
use crate::process::start;

#[tokio::test]
async fn sources_and_destinations_print_json_or_a_table_and_errors_carry_the_api_message() {
    let data = tempfile::tempdir().unwrap();
    let server = start(data.path(), &[]).await;
    let base = &server.base;
    let (src, key) = source(base, "web").await;
    assert_eq!(key.len(), 32);

    let list = run_json(base, &["sources", "list"]).await;
    assert_eq!(list[0]["id"], src.as_str());
    assert!(
        list[0].get("write_key").is_none(),
        "the key is shown only at creation"
    );
    let (code, table, _) = run(base, &["sources", "list", "--table"]).await;
    assert_eq!(code, 0);
    let mut rows = table.lines();
    assert!(rows.next().unwrap().starts_with("ID"));
    assert!(rows.next().unwrap().starts_with(&format!("{src}  web")));

    let dst = run_json(
        base,
        &[
            "destinations",
            "create",
            "--name",
            "hooks",
            "--webhook",
            "https://hooks.example/a",
            "--source",
            &src,
            "--shared-secret",
            "s3cret-value",
        ],
    )
    .await;
    assert_eq!(
        dst["settings"]["sharedSecret"], "s3cr…",
        "secrets stay masked"
    );
    let id = dst["id"].as_str().unwrap();
    let got = run_json(base, &["destinations", "get", id]).await;
    assert_eq!(got["source_ids"], json!([src]));
    // Every state the API lists by, `filtered` included (docs/schema.md).
    for state in ["pending", "succeeded", "dead", "discarded", "filtered"] {
        let rows = run_json(base, &["deliveries", "--destination", id, "--state", state]).await;
        assert_eq!(rows, json!([]), "{state}");
    }

    let (code, _, stderr) = run(base, &["sources", "get", "src_missing"]).await;
    assert_eq!(code, 1);
    assert!(
        stderr.contains("source not found (HTTP 404, not_found)"),
        "{stderr}"
    );
    let (code, _, stderr) = run(
        base,
        &[
            "destinations",
            "create",
            "--name",
            "x",
            "--webhook",
            "ftp://nope",
        ],
    )
    .await;
    assert_eq!(code, 1);
    assert!(
        stderr.contains("must use the http or https protocol"),
        "{stderr}"
    );
    let (code, _, stderr) = run(
        base,
        &["sources", "list", "--token", "wrong-token-0123456789"],
    )
    .await;
    assert_eq!(code, 1);
    assert!(stderr.contains("invalid admin token"), "{stderr}");
}

async fn dead_ids(base: &str, dst: &str) -> Vec<String> {
    let rows = run_json(
        base,
        &["deliveries", "--destination", dst, "--state", "dead"],
    )
    .await;
    let mut ids: Vec<String> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["message_id"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    ids
}

#[tokio::test]
async fn replay_moves_dead_deliveries_back_and_prints_how_many() {
    let data = tempfile::tempdir().unwrap();
    let server = start(data.path(), &[]).await;
    let base = &server.base;
    let receiver = Receiver::start().await;
    receiver.set_default(Reply::status(400)); // not retryable: dead at once
    let (src, key) = source(base, "web").await;
    let dst = run_json(
        base,
        &[
            "destinations",
            "create",
            "--name",
            "h",
            "--webhook",
            &receiver.url(),
            "--source",
            &src,
        ],
    )
    .await;
    let dst = dst["id"].as_str().unwrap().to_owned();
    let events: Vec<Value> = ["a", "b", "c"]
        .iter()
        .map(|m| json!({"type": "track", "userId": "u", "event": "E", "messageId": m}))
        .collect();
    send_batch(base, &key, json!(events)).await;
    receiver.wait_for(3, Duration::from_secs(10)).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while dead_ids(base, &dst).await.len() < 3 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "deliveries did not die"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    receiver.set_default(Reply::status(200));
    let one = run_json(
        base,
        &["replay", "--destination", &dst, "--message-id", "a"],
    )
    .await;
    assert_eq!(one, json!({"replayed": 1}));
    let rest = run_json(base, &["replay", "--destination", &dst, "--since", "1h"]).await;
    assert_eq!(rest, json!({"replayed": 2}));
    let sent = receiver.wait_for(6, Duration::from_secs(10)).await;
    let mut replayed: Vec<String> = sent[3..]
        .iter()
        .map(|r| r.header("x-sluice-message-id").unwrap().to_owned())
        .collect();
    replayed.sort();
    assert_eq!(replayed, ["a", "b", "c"]);
    let none = run_json(base, &["replay", "--destination", &dst]).await;
    assert_eq!(
        none,
        json!({"replayed": 0}),
        "nothing dead is left to replay"
    );
    let future = run_json(
        base,
        &["replay", "--destination", &dst, "--since", "2999-01-01"],
    )
    .await;
    assert_eq!(future, json!({"replayed": 0}));
}

#[tokio::test]
async fn a_2xx_that_is_not_sluice_fails_every_command_and_imports_nothing() {
    // A proxy's index page answering every path with 200.
    let page = Receiver::start().await;
    page.set_default(
        Reply::status(200)
            .header("content-type", "text/html")
            .body("<html>Welcome to nginx!</html>"),
    );
    let base = page
        .url()
        .trim_end_matches("/hook")
        .replace("http://", "http://ops:pw-s3cret@");
    for args in [
        &["sources", "list"][..],
        &["sources", "create", "--name", "web"][..],
        &["replay", "--destination", "dst_x"][..],
        &["deliveries", "--table"][..],
    ] {
        let (code, stdout, stderr) = run(&base, args).await;
        assert_eq!(code, 1, "sluice {args:?}: {stdout} {stderr}");
        assert!(stdout.is_empty(), "sluice {args:?} printed {stdout}");
        assert!(stderr.contains("not Sluice's"), "sluice {args:?}: {stderr}");
        assert!(!stderr.contains("pw-s3cret"), "{stderr}");
    }

    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("calls.jsonl");
    std::fs::write(
        &input,
        "{\"type\":\"track\",\"userId\":\"u\",\"event\":\"e\"}\n",
    )
    .expect("write");
    let checkpoint = dir.path().join("import.checkpoint");
    let (code, _, stderr) = run(
        &base,
        &[
            "import",
            "--write-key",
            "some-write-key-0123456789",
            "--checkpoint",
            checkpoint.to_str().expect("utf-8"),
            input.to_str().expect("utf-8"),
        ],
    )
    .await;
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("not Sluice's"), "{stderr}");
    let recorded = std::fs::read_to_string(&checkpoint).unwrap_or_default();
    assert!(
        !recorded.contains("[1,1]"),
        "the line is not recorded as done: {recorded}"
    );
}
