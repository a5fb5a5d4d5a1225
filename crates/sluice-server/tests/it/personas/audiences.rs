//! Audiences: first sync, only changes, edits, windows, NOT, nesting and cycles.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use super::{SECRET, create, setup, track, wait_bodies};
use crate::support::{TestServer, eventually, test_config};

#[tokio::test]
async fn audience_member_leaves_when_the_window_passes_with_no_new_event() {
    let (s, _dir, key, dest, rx) = setup().await;
    let aud = create(
        &s,
        "/audiences",
        json!({"name": "Recent Buyers", "destination_ids": [dest],
               "definition": {"condition": {"performed": {"event": "Bought", "window": {"seconds": 2}}}}}),
    )
    .await;
    assert_eq!(aud["key"], json!("recent_buyers"));
    track(&s, &key, "u1", "Bought", json!({})).await;
    let got = wait_bodies(&rx, 1).await;
    assert_eq!(got[0]["traits"], json!({"recent_buyers": true}));
    assert_eq!(
        got[0]["context"]["personas"],
        json!({"computation_class": "audience", "computation_key": "recent_buyers",
               "computation_id": aud["id"], "namespace": "spa_sluice", "space_id": "spa_sluice"})
    );
    let id = aud["id"].as_str().unwrap();
    let (_, members) = s
        .admin(Method::GET, &format!("/audiences/{id}/members"), None)
        .await;
    assert_eq!(members["data"][0]["user_id"], json!("u1"));
    let got = wait_bodies(&rx, 2).await;
    assert_eq!(got[1]["traits"], json!({"recent_buyers": false}));
    // The exit was prepared ahead; the stored membership follows within a
    // poll interval of the boundary.
    let members = format!("/audiences/{id}/members");
    eventually(5, || async {
        let (_, body) = s.admin(Method::GET, &members, None).await;
        (body["data"] == json!([])).then_some(())
    })
    .await;
    s.stop().await;
}

#[tokio::test]
async fn a_new_event_before_the_boundary_withdraws_the_prepared_exit() {
    let (s, _dir, key, dest, rx) = setup().await;
    create(
        &s,
        "/audiences",
        json!({"name": "Recent Buyers", "destination_ids": [dest],
               "definition": {"condition": {"performed": {"event": "Bought", "window": {"seconds": 2}}}}}),
    )
    .await;
    track(&s, &key, "u1", "Bought", json!({})).await;
    let got = wait_bodies(&rx, 1).await;
    assert_eq!(got[0]["traits"], json!({"recent_buyers": true}));
    // By now the exit at +2 s is prepared (its message waits in the outbox).
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let again = std::time::Instant::now();
    track(&s, &key, "u1", "Bought", json!({})).await;
    let got = wait_bodies(&rx, 2).await;
    assert_eq!(got[1]["traits"], json!({"recent_buyers": false}));
    assert!(
        again.elapsed() >= Duration::from_millis(1900),
        "the exit follows the second purchase, not the first: {:?}",
        again.elapsed()
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(rx.requests().len(), 2, "one entry, one exit");
    s.stop().await;
}

#[tokio::test]
async fn nested_not_and_audience_of_audience_follow_events_and_cycles_are_refused() {
    let (s, _dir, key, dest, rx) = setup().await;
    create(
        &s,
        "/audiences",
        json!({"name": "Buyers", "definition": {"condition": {"performed": {"event": "Bought"}}}}),
    )
    .await;
    let happy = create(
        &s,
        "/audiences",
        json!({"name": "Happy Buyers", "destination_ids": [dest],
               "definition": {"condition": {"and": [{"audience": "buyers"},
                                                    {"not": {"performed": {"event": "Refund"}}}]}}}),
    )
    .await;
    track(&s, &key, "u1", "Bought", json!({})).await;
    let got = wait_bodies(&rx, 1).await;
    assert_eq!(got[0]["traits"], json!({"happy_buyers": true}));
    track(&s, &key, "u1", "Refund", json!({})).await;
    let got = wait_bodies(&rx, 2).await;
    assert_eq!(got[1]["traits"], json!({"happy_buyers": false}));

    // buyers -> happy_buyers -> buyers would be a cycle.
    let (code, body) = s
        .admin(
            Method::POST,
            "/audiences",
            Some(json!({"name": "Loop", "key": "loop",
                        "definition": {"condition": {"audience": "loop"}}})),
        )
        .await;
    assert_eq!(code, 400, "{body}");
    assert!(
        body["message"].as_str().unwrap().contains("loop -> loop"),
        "{body}"
    );
    let id = happy["id"].as_str().unwrap();
    let (code, body) = s
        .admin(Method::GET, &format!("/audiences/{id}"), None)
        .await;
    assert_eq!(code, 200, "{body}");
    let (code, body) = s
        .admin(
            Method::POST,
            "/computed-traits",
            Some(json!({"name": "Bad", "definition": {"kind": "sum", "event": "E"}})),
        )
        .await;
    assert_eq!(code, 400);
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .starts_with("definition.property"),
        "{body}"
    );
    s.stop().await;
}

#[tokio::test]
async fn an_audience_over_a_computed_trait_follows_its_value_and_a_missing_trait_is_refused() {
    let (s, _dir, key, dest, rx) = setup().await;
    let repeat = json!({"name": "Repeat Buyers", "destination_ids": [dest],
        "definition": {"condition": {"computed_trait": {"key": "orders", "op": "gt", "value": 1}}}});
    let (code, body) = s
        .admin(Method::POST, "/audiences", Some(repeat.clone()))
        .await;
    assert_eq!(code, 400, "{body}");
    assert_eq!(
        body["message"],
        json!("definition.condition.computed_trait.key: computed trait \"orders\" does not exist"),
        "{body}"
    );
    // The trait itself is not connected: only the audience sends.
    create(
        &s,
        "/computed-traits",
        json!({"name": "Orders", "definition": {"kind": "counter", "event": "Bought"}}),
    )
    .await;
    create(&s, "/audiences", repeat).await;
    track(&s, &key, "u1", "Bought", json!({})).await;
    track(&s, &key, "u2", "Bought", json!({})).await;
    track(&s, &key, "u1", "Bought", json!({})).await;
    let got = wait_bodies(&rx, 1).await;
    assert_eq!(got[0]["userId"], json!("u1"));
    assert_eq!(got[0]["traits"], json!({"repeat_buyers": true}));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(rx.requests().len(), 1, "u2 bought once: not a member");
    s.stop().await;
}

#[tokio::test]
async fn an_audience_first_syncs_its_members_then_sends_only_changes_and_edits() {
    let (s, _dir, key, dest, rx) = setup().await;
    for u in ["u1", "u2", "u3"] {
        let call = json!({"userId": u, "traits": {"plan": if u == "u3" { "free" } else { "pro" }}});
        assert_eq!(
            s.collect("/v1/identify", Some(&key), call.to_string())
                .await
                .0,
            200
        );
    }
    eventually(10, || async {
        let (code, _) = s.admin(Method::GET, "/profiles/u3", None).await;
        (code == 200).then_some(())
    })
    .await;
    let aud = create(
        &s,
        "/audiences",
        json!({"name": "Pro Users", "destination_ids": [dest],
               "definition": {"condition": {"trait": {"key": "plan", "op": "equals", "value": "pro"}}}}),
    )
    .await;
    let got = wait_bodies(&rx, 2).await;
    let mut first: Vec<&str> = got.iter().filter_map(|b| b["userId"].as_str()).collect();
    first.sort_unstable();
    assert_eq!(first, vec!["u1", "u2"], "first sync: every member once");
    assert!(
        got.iter()
            .all(|b| b["traits"] == json!({"pro_users": true}))
    );
    // u3 upgrades: one message; u1 sends an unrelated identify: nothing.
    let call = json!({"userId": "u3", "traits": {"plan": "pro"}});
    assert_eq!(
        s.collect("/v1/identify", Some(&key), call.to_string())
            .await
            .0,
        200
    );
    let call = json!({"userId": "u1", "traits": {"age": 40}});
    assert_eq!(
        s.collect("/v1/identify", Some(&key), call.to_string())
            .await
            .0,
        200
    );
    let got = wait_bodies(&rx, 3).await;
    assert_eq!(got[2]["userId"], json!("u3"));
    // An edit sends only the differences: u1 (age 40) stays, u2 and u3 leave.
    let id = aud["id"].as_str().unwrap();
    let (code, body) = s
        .admin(
            Method::PATCH,
            &format!("/audiences/{id}"),
            Some(json!({"definition": {"condition": {"and": [
                {"trait": {"key": "plan", "op": "equals", "value": "pro"}},
                {"trait": {"key": "age", "op": "gt", "value": 30}}]}}})),
        )
        .await;
    assert_eq!(code, 200, "{body}");
    let got = wait_bodies(&rx, 5).await;
    let mut left: Vec<(&str, &Value)> = got[3..]
        .iter()
        .map(|b| {
            (
                b["userId"].as_str().unwrap_or(""),
                &b["traits"]["pro_users"],
            )
        })
        .collect();
    left.sort_by_key(|(u, _)| *u);
    assert_eq!(left, vec![("u2", &json!(false)), ("u3", &json!(false))]);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(rx.requests().len(), 5);
    let (_, a) = s
        .admin(Method::GET, &format!("/audiences/{id}"), None)
        .await;
    assert_eq!(a["status"]["size"], json!(1));
    assert_eq!(a["status"]["messages_sent_by_destination"][&dest], json!(5));
    // Deleting sends nothing, and the key stays taken.
    let (code, _) = s
        .admin(Method::DELETE, &format!("/audiences/{id}"), None)
        .await;
    assert_eq!(code, 204);
    let (code, _) = s
        .admin(
            Method::POST,
            "/audiences",
            Some(json!({"name": "Pro Users", "definition": {"condition": {"performed": {"event": "X"}}}})),
        )
        .await;
    assert_eq!(code, 409);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(rx.requests().len(), 5);
    s.stop().await;
}

#[tokio::test]
async fn messages_carry_the_configured_space_id_as_namespace_and_space_id() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = test_config(dir.path());
    config.personas.poll_interval_ms = 20;
    config.personas.space_id = "spa_acme".into();
    let s = TestServer::start_with(config).await;
    let (_src, key) = s.source("app").await;
    let (quiet, _) = s.source("quiet").await;
    let rx = sluice_testkit::Receiver::start().await;
    let dest = s
        .webhook(&quiet, json!([{"url": rx.url()}]), Some(SECRET))
        .await;
    create(
        &s,
        "/audiences",
        json!({"name": "Buyers", "destination_ids": [dest],
               "definition": {"condition": {"performed": {"event": "Bought"}}}}),
    )
    .await;
    track(&s, &key, "u1", "Bought", json!({})).await;
    let got = wait_bodies(&rx, 1).await;
    let personas = &got[0]["context"]["personas"];
    assert_eq!(personas["namespace"], json!("spa_acme"));
    assert_eq!(personas["space_id"], json!("spa_acme"));
    s.stop().await;
}
