//! `sluice users` and `sluice tokens` against the real server: the first
//! admin of a fresh install, created with the admin token.

use std::process::Stdio;

use serde_json::json;
use tokio::io::AsyncWriteExt;

use super::{run, run_json, sluice};
use crate::process::start;

#[tokio::test]
async fn the_first_admin_is_made_with_the_admin_token_and_its_token_works_in_its_place() {
    let data = tempfile::tempdir().unwrap();
    let server = start(data.path(), &[]).await;
    let base = &server.base;
    let admin = run_json(
        base,
        &[
            "users",
            "create",
            "--username",
            "Root@Example.com",
            "--role",
            "admin",
        ],
    )
    .await;
    assert_eq!(admin["username"], "root@example.com");
    let generated = admin["password"]
        .as_str()
        .expect("a generated password, shown once");
    assert_eq!(generated.len(), 24);
    let id = admin["id"].as_str().unwrap();

    // A password from standard input is not echoed back.
    let mut child = sluice(
        base,
        &[
            "users",
            "create",
            "--username",
            "viv",
            "--role",
            "viewer",
            "--password-stdin",
        ],
    )
    .stdin(Stdio::piped())
    .spawn()
    .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"a long enough passphrase\n")
        .await
        .unwrap();
    drop(stdin);
    let out = child.wait_with_output().await.unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let viv: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(viv.get("password").is_none(), "{viv}");

    let token = run_json(
        base,
        &[
            "tokens",
            "create",
            "--name",
            "root's laptop",
            "--role",
            "admin",
            "--user",
            id,
        ],
    )
    .await;
    let secret = token["token"].as_str().unwrap();
    let (code, table, stderr) = run(base, &["users", "list", "--table", "--token", secret]).await;
    assert_eq!(code, 0, "{stderr}");
    assert!(
        table.contains("root@example.com") && table.contains("viv"),
        "{table}"
    );

    // The changes are in the audit log as the command line's.
    let audit = reqwest::Client::new()
        .get(format!("{base}/api/v1/audit?resource=user"))
        .bearer_auth(secret)
        .send()
        .await
        .unwrap()
        .json::<serde_json::Value>()
        .await
        .unwrap();
    let entries = audit["data"].as_array().unwrap();
    assert_eq!(entries.len(), 2, "{audit}");
    for e in entries {
        assert_eq!(e["via"], json!("cli"));
        assert_eq!(e["actor"]["name"], json!("admin token"));
    }
    let (code, _, stderr) = run(
        base,
        &["users", "create", "--username", "x", "--role", "boss"],
    )
    .await;
    assert_eq!(code, 1);
    assert!(
        stderr.contains("role: must be admin, editor or viewer"),
        "{stderr}"
    );
}
