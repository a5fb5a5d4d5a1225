//! A destination that starts receiving after a first sync (enabled again,
//! or connected while disabled) gets a first sync of its own.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};

use super::{create, setup, track, wait_bodies};
use sluice_testkit::Receiver;

use crate::support::{TestServer, eventually, test_config};

async fn set_enabled(s: &TestServer, dest: &str, enabled: bool) {
    let (code, body) = s
        .admin(
            Method::PATCH,
            &format!("/destinations/{dest}"),
            Some(json!({"enabled": enabled})),
        )
        .await;
    assert_eq!(code, 200, "{body}");
}

async fn identify(s: &TestServer, key: &str, user: &str, plan: &str) {
    let call = json!({"userId": user, "traits": {"plan": plan}});
    let (code, _) = s.collect("/v1/identify", Some(key), call.to_string()).await;
    assert_eq!(code, 200);
}

/// The computation's status once `done` holds for it.
async fn status_when(s: &TestServer, path: &str, done: impl Fn(&Value) -> bool) -> Value {
    eventually(15, || async {
        let (_, body) = s.admin(Method::GET, path, None).await;
        done(&body["status"]).then_some(body["status"].clone())
    })
    .await
}

/// (userId, value of `key`) of `bodies`, sorted.
fn sent(bodies: &[Value], key: &str) -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = bodies
        .iter()
        .map(|b| {
            let user = b["userId"].as_str().unwrap_or_default().to_owned();
            (user, b["traits"][key].clone())
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[tokio::test]
async fn an_audience_sends_its_members_to_a_destination_enabled_after_its_first_sync() {
    let (s, _dir, key, dest, rx) = setup().await;
    set_enabled(&s, &dest, false).await;
    for u in ["u1", "u2", "u3"] {
        identify(&s, &key, u, "pro").await;
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
    let path = format!("/audiences/{}", aud["id"].as_str().unwrap());
    // The first sync ran while the destination was off: nothing was sent
    // to it, and nothing is counted as sent.
    let status = status_when(&s, &path, |st| st["size"] == json!(3)).await;
    assert_eq!(status["messages_sent_by_destination"], json!({}));
    assert_eq!(status["messages_sent"], json!(0));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(rx.requests().is_empty());

    // Switched on: every current member, once.
    set_enabled(&s, &dest, true).await;
    let got = wait_bodies(&rx, 3).await;
    let members: Vec<(String, Value)> = ["u1", "u2", "u3"]
        .iter()
        .map(|u| (u.to_string(), json!(true)))
        .collect();
    assert_eq!(sent(&got, "pro_users"), members);
    // Then only changes.
    identify(&s, &key, "u4", "pro").await;
    let got = wait_bodies(&rx, 4).await;
    assert_eq!(sent(&got[3..], "pro_users"), [("u4".into(), json!(true))]);
    let status = status_when(&s, &path, |st| {
        st["messages_sent_by_destination"][&dest] == json!(4)
    })
    .await;
    assert_eq!(status["messages_sent"], json!(4));

    // Off for a while: u1 leaves meanwhile, and nothing is sent or counted.
    set_enabled(&s, &dest, false).await;
    identify(&s, &key, "u1", "free").await;
    status_when(&s, &path, |st| st["size"] == json!(3)).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(rx.requests().len(), 4);
    // On again: a fresh first sync of the members as they are now.
    set_enabled(&s, &dest, true).await;
    let got = wait_bodies(&rx, 7).await;
    let now: Vec<(String, Value)> = ["u2", "u3", "u4"]
        .iter()
        .map(|u| (u.to_string(), json!(true)))
        .collect();
    assert_eq!(sent(&got[4..], "pro_users"), now);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(rx.requests().len(), 7, "each member once");
    let status = status_when(&s, &path, |st| {
        st["messages_sent_by_destination"][&dest] == json!(7)
    })
    .await;
    assert_eq!(status["messages_sent"], json!(7));
    s.stop().await;
}

#[tokio::test]
async fn a_trait_connected_to_a_disabled_destination_sends_its_values_once_enabled() {
    let (s, _dir, key, dest, rx) = setup().await;
    track(&s, &key, "u1", "Bought", json!({})).await;
    track(&s, &key, "u1", "Bought", json!({})).await;
    track(&s, &key, "u2", "Bought", json!({})).await;
    let ct = create(
        &s,
        "/computed-traits",
        json!({"name": "Purchases", "definition": {"kind": "counter", "event": "Bought"}}),
    )
    .await;
    let path = format!("/computed-traits/{}", ct["id"].as_str().unwrap());
    status_when(&s, &path, |st| st["people_with_value"] == json!(2)).await;
    set_enabled(&s, &dest, false).await;
    let (code, body) = s
        .admin(Method::POST, &format!("{path}/destinations/{dest}"), None)
        .await;
    assert!((200..300).contains(&code), "{code} {body}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(rx.requests().is_empty(), "connected while off: nothing yet");
    set_enabled(&s, &dest, true).await;
    let got = wait_bodies(&rx, 2).await;
    assert_eq!(
        sent(&got, "purchases"),
        [("u1".into(), json!(2)), ("u2".into(), json!(1))]
    );
    track(&s, &key, "u2", "Bought", json!({})).await;
    let got = wait_bodies(&rx, 3).await;
    assert_eq!(sent(&got[2..], "purchases"), [("u2".into(), json!(2))]);
    let status = status_when(&s, &path, |st| {
        st["messages_sent_by_destination"][&dest] == json!(3)
    })
    .await;
    assert_eq!(status["messages_sent"], json!(3));
    s.stop().await;
}

/// The first sync is queued with the switch, in the store: a node whose
/// engine is off takes the switch, and the next node to run the engine
/// sends it.
#[tokio::test]
async fn the_first_sync_queued_by_switching_on_is_sent_by_the_next_engine() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = |engine: bool| {
        let mut c = test_config(dir.path());
        c.personas.poll_interval_ms = 20;
        c.personas.enabled = engine;
        c
    };
    let rx = Receiver::start().await;
    let s = TestServer::start_with(config(true)).await;
    let (_src, key) = s.source("app").await;
    let (quiet, _) = s.source("quiet").await;
    let dest = s.webhook(&quiet, json!([{"url": rx.url()}]), None).await;
    set_enabled(&s, &dest, false).await;
    identify(&s, &key, "u1", "pro").await;
    identify(&s, &key, "u2", "pro").await;
    eventually(10, || async {
        let (code, _) = s.admin(Method::GET, "/profiles/u2", None).await;
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
    let path = format!("/audiences/{}", aud["id"].as_str().unwrap());
    status_when(&s, &path, |st| st["size"] == json!(2)).await;
    s.stop().await;

    let s = TestServer::start_with(config(false)).await;
    set_enabled(&s, &dest, true).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(rx.requests().is_empty(), "no engine ran here");
    s.stop().await;

    let s = TestServer::start_with(config(true)).await;
    let got = rx.wait_for(2, Duration::from_secs(15)).await;
    let mut users: Vec<Value> = got
        .iter()
        .map(|r| serde_json::from_slice::<Value>(&r.body).expect("json")["userId"].clone())
        .collect();
    users.sort_by_key(Value::to_string);
    assert_eq!(users, [json!("u1"), json!("u2")]);
    s.stop().await;
}
