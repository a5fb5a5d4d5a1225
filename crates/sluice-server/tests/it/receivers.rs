//! The documented reference receivers (docs/receivers) verify real, signed
//! deliveries of every call type: the code users copy is the code we test.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

use crate::support::TestServer;

const SECRET: &str = "receiver-secret-42";

struct Running {
    name: &'static str,
    child: Child,
    url: String,
    out: Lines<BufReader<ChildStdout>>,
}

fn docs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/receivers")
}

async fn spawn(name: &'static str, mut cmd: Command) -> Running {
    let mut child = cmd
        .env("PORT", "0")
        .env("SHARED_SECRET", SECRET)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("starting the {name} receiver: {e}"));
    let mut err = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let addr = tokio::time::timeout(Duration::from_secs(120), async {
        while let Ok(Some(line)) = err.next_line().await {
            if let Some((_, addr)) = line.split_once("listening on ") {
                return addr.trim().to_owned();
            }
        }
        panic!("the {name} receiver exited before listening");
    })
    .await
    .unwrap_or_else(|_| panic!("the {name} receiver did not start"));
    let out = BufReader::new(child.stdout.take().expect("stdout")).lines();
    Running {
        name,
        child,
        url: format!("http://{addr}/hook"),
        out,
    }
}

async fn go_receiver() -> Command {
    let bin = tempfile::tempdir()
        .expect("tempdir")
        .keep()
        .join("receiver");
    let status = Command::new("go")
        .args(["build", "-o"])
        .arg(&bin)
        .arg(".")
        .current_dir(docs().join("go"))
        .status()
        .await
        .expect("go build");
    assert!(status.success(), "building the Go receiver");
    Command::new(bin)
}

#[tokio::test]
async fn reference_receivers_verify_real_deliveries() {
    let mut node = Command::new("node");
    node.arg(docs().join("node/receiver.mjs"));
    let mut python = Command::new("python3");
    python.arg(docs().join("python/receiver.py"));
    let mut receivers = vec![
        spawn("node", node).await,
        spawn("python", python).await,
        spawn("go", go_receiver().await).await,
    ];

    let s = TestServer::start().await;
    let (src, key) = s.source("web").await;
    let urls: Vec<Value> = receivers.iter().map(|r| json!(r.url)).collect();
    s.webhook(&src, json!(urls), Some(SECRET)).await;
    let batch = json!({"batch": [
        {"type": "track", "userId": "u", "event": "Signed Up", "properties": {"plan": "pro", "price": 0.1, "big": 12345678901234567890u64, "emoji": "🎉", "ctl": "\u{1}"}},
        {"type": "identify", "userId": "u", "traits": {"name": "Zoë", "10": "index key", "a": 1}},
        {"type": "page", "userId": "u", "name": "Home", "properties": {"path": "/", "url": "https://x.example/"}},
        {"type": "screen", "userId": "u", "name": "Main", "context": {"os": {"name": "iOS", "version": "17.1"}}},
        {"type": "group", "userId": "u", "groupId": "g1", "traits": {"employees": 1e3}},
        {"type": "alias", "userId": "u", "previousId": "anon-1"},
    ]});
    assert_eq!(
        s.collect("/v1/batch", Some(&key), batch.to_string())
            .await
            .0,
        200
    );

    for r in &mut receivers {
        let mut types = Vec::new();
        for _ in 0..6 {
            let line = tokio::time::timeout(Duration::from_secs(15), r.out.next_line())
                .await
                .unwrap_or_else(|_| panic!("{}: timed out waiting for deliveries", r.name))
                .expect("read")
                .unwrap_or_else(|| panic!("{}: exited", r.name));
            let v: Value =
                serde_json::from_str(&line).unwrap_or_else(|e| panic!("{}: {e}: {line:?}", r.name));
            assert_eq!(
                v["valid"],
                json!(true),
                "{} rejected a delivery: {line}",
                r.name
            );
            types.push(v["type"].as_str().unwrap_or("").to_owned());
        }
        types.sort();
        assert_eq!(
            types,
            ["alias", "group", "identify", "page", "screen", "track"],
            "{}",
            r.name
        );
        let _ = r.child.start_kill();
    }
}
