//! `FAILED`: a source-scoped regulation whose source was deleted before the
//! job got to it fails with the reason, keeps the user's data, and does not
//! hold up the regulations after it.

use std::time::Duration;

use reqwest::Method;
use serde_json::json;

use super::{finished, regulate, send, stored_mentions};
use crate::support::{TestServer, eventually, test_config};

#[tokio::test]
async fn a_regulation_whose_scoped_source_was_deleted_fails_with_the_reason() {
    let dir = tempfile::tempdir().expect("tempdir");
    // The job polls once at start, then not for a minute: the source is
    // deleted before it sees the regulation, which it does after a restart.
    let mut config = test_config(dir.path());
    config.personas.poll_interval_ms = 60_000;
    let s = TestServer::start_with(config.clone()).await;
    let (gone, key_gone) = s.source("gone").await;
    let (kept, key_kept) = s.source("kept").await;
    send(
        &s,
        &key_gone,
        "track",
        json!({"userId": "u1", "event": "A"}),
    )
    .await;
    send(
        &s,
        &key_kept,
        "track",
        json!({"userId": "u2", "event": "B"}),
    )
    .await;
    let scoped = regulate(&s, "DELETE_ONLY", &["u1"], Some(&gone)).await;
    let after = regulate(&s, "DELETE_INTERNAL", &["u2"], None).await;
    let (status, body) = s
        .admin(Method::DELETE, &format!("/sources/{gone}"), None)
        .await;
    assert!(status == 200 || status == 204, "{status} {body}");
    s.stop().await;

    config.personas.poll_interval_ms = 20;
    let s = TestServer::start_with(config).await;
    let detail = eventually(20, || async {
        let (status, body) = s
            .admin(Method::GET, &format!("/regulations/{scoped}"), None)
            .await;
        assert_eq!(status, 200, "{body}");
        (body["status"] != json!("INITIALIZED") && body["status"] != json!("RUNNING"))
            .then_some(body)
    })
    .await;
    assert_eq!(detail["status"], json!("FAILED"), "{detail}");
    assert_eq!(
        detail["error"],
        json!(format!("source_id: source '{gone}' was deleted"))
    );
    assert!(detail["finishedAt"].is_string(), "{detail}");
    assert_eq!(detail["subjectDetails"][0]["done"], json!(false));
    let (_, list) = s.admin(Method::GET, "/regulations", None).await;
    let listed = list["data"]
        .as_array()
        .and_then(|a| a.iter().find(|r| r["id"] == json!(scoped)).cloned())
        .expect("listed");
    assert_eq!(listed["status"], json!("FAILED"));
    assert_eq!(listed["error"], detail["error"]);

    // The next regulation still runs, and reports no error.
    let next = finished(&s, &after).await;
    assert_eq!(next["error"], json!(null));
    assert!(!stored_mentions(&s, &kept, "u2").await);
    // A failed regulation is never picked up again.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (_, again) = s
        .admin(Method::GET, &format!("/regulations/{scoped}"), None)
        .await;
    assert_eq!(again["status"], json!("FAILED"));
    assert_eq!(again["finishedAt"], detail["finishedAt"]);
    s.stop().await;
}
