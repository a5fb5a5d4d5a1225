//! Failed dashboard sign-ins in the audit log: each one with the username
//! tried, the address and the browser, never the password; a flood of
//! guesses writes a bounded number of entries whose counts add up to every
//! attempt.

use std::time::Duration;

use serde_json::{Value, json};

use super::people::sign_in_as;
use super::{PASSWORD, audit_log, user};
use crate::dashboard::sign_in;
use crate::support::{TestServer, eventually};

/// The audit log's session entries with `action`, oldest first.
async fn session_entries(s: &TestServer, action: &str) -> Vec<Value> {
    let mut list: Vec<Value> = audit_log(s, "?resource=session&limit=500")
        .await
        .into_iter()
        .filter(|e| e["action"] == json!(action))
        .collect();
    list.reverse();
    list
}

#[tokio::test]
async fn every_failed_sign_in_is_recorded_with_who_was_tried_and_never_the_password() {
    let s = TestServer::start().await;
    let carol = user(&s, "carol", "viewer").await;
    assert_eq!(sign_in_as(&s, "Carol", "wrong password!").await, Err(401));
    assert_eq!(sign_in_as(&s, "nobody", PASSWORD).await, Err(401));
    assert_eq!(sign_in_as(&s, "hunter2 typed here", "x").await, Err(401));
    let res = sign_in(&s, "not-the-admin-token-at-all", None).await;
    assert_eq!(res.status().as_u16(), 401);

    let failed = eventually(5, || async {
        let list = session_entries(&s, "sign-in-failed").await;
        (list.len() == 4).then_some(list)
    })
    .await;
    let names: Vec<&Value> = failed.iter().map(|e| &e["actor"]["name"]).collect();
    assert_eq!(
        names,
        [
            &json!("carol"),
            &json!("nobody"),
            &json!("(not a username)"),
            &json!("admin token")
        ]
    );
    assert_eq!(failed[0]["actor"]["kind"], json!("anonymous"));
    assert_eq!(
        failed[0]["actor"]["id"],
        json!(carol),
        "the user tried, when there is one"
    );
    assert_eq!(failed[1]["actor"]["id"], Value::Null);
    assert_eq!(failed[0]["ip"], json!("127.0.0.1"));
    assert_eq!(failed[0]["user_agent"], json!("Mozilla/5.0 (test)"));
    assert_eq!(failed[0]["via"], json!("dashboard"));
    assert_eq!(
        failed[0]["after"]["reason"],
        json!("wrong username or password")
    );
    assert_eq!(failed[0]["after"]["method"], json!("password"));
    assert_eq!(failed[3]["after"]["reason"], json!("invalid admin token"));
    assert_eq!(failed[3]["after"]["method"], json!("admin_token"));

    assert!(sign_in_as(&s, "carol", PASSWORD).await.is_ok());
    let by_carol = audit_log(&s, "?actor=carol").await;
    let actions: Vec<&Value> = by_carol.iter().map(|e| &e["action"]).collect();
    assert_eq!(
        actions,
        [&json!("sign-in"), &json!("sign-in-failed")],
        "filtered by the name tried"
    );

    let log = audit_log(&s, "?limit=500").await;
    let text = serde_json::to_string(&log).unwrap();
    for secret in [
        "wrong password!",
        PASSWORD,
        "not-the-admin-token-at-all",
        "hunter2",
    ] {
        assert!(!text.contains(secret), "{secret} is in the log");
    }
    s.stop().await;
}

#[tokio::test]
async fn a_flood_of_guesses_writes_a_bounded_number_of_entries_that_count_every_attempt() {
    let s = TestServer::start().await;
    user(&s, "dora", "editor").await;
    let mut failed = 0u64;
    for n in 0..40 {
        let status = sign_in_as(&s, "dora", &format!("guess number {n}")).await;
        assert!(matches!(status, Err(401 | 429)), "{status:?}");
        failed += 1;
    }
    // The throttle makes the address wait; the right password then signs in.
    loop {
        match sign_in_as(&s, "dora", PASSWORD).await {
            Ok(_) => break,
            Err(429) => failed += 1,
            Err(other) => panic!("{other}"),
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let counted = |entries: &[Value], field: &str| -> u64 {
        entries
            .iter()
            .filter_map(|e| e["after"][field].as_u64())
            .sum()
    };
    let (written, carried) = eventually(5, || async {
        let one_by_one = session_entries(&s, "sign-in-failed").await;
        let summaries = session_entries(&s, "sign-in-failed-summary").await;
        let signed_in = session_entries(&s, "sign-in").await;
        let carried = counted(&one_by_one, "suppressed")
            + counted(&summaries, "suppressed")
            + counted(&signed_in, "suppressed_failures");
        let written = one_by_one.len() as u64;
        (written + carried == failed).then_some((written, carried))
    })
    .await;
    // Five a minute from one address; the flood may straddle two minutes.
    assert!(
        (5..=10).contains(&written),
        "{written} entries for {failed} failures"
    );
    assert!(carried >= failed - 10, "{carried}");
    s.stop().await;
}
