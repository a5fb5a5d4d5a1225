//! Suppression at ingest: 200, counted, neither stored nor delivered, and
//! lifted by UNSUPPRESS.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use sluice_testkit::Receiver;

use super::{finished, hook, regulate, send, start, stored_mentions};
use crate::support::eventually;

fn users_received(rx: &Receiver) -> Vec<String> {
    rx.requests()
        .iter()
        .filter_map(|r| serde_json::from_slice::<Value>(&r.body).ok())
        .filter_map(|b| b["userId"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn suppressed_calls_get_200_are_counted_and_neither_stored_nor_delivered() {
    let (s, _dir) = start().await;
    let (src, key) = s.source("app").await;
    let rx = Receiver::start().await;
    hook(&s, &[&src], &rx).await;
    let id = regulate(&s, "SUPPRESS_ONLY", &["hushed-user"], None).await;
    assert_eq!(finished(&s, &id).await["subjects"], json!(1));
    let (_, list) = s.admin(Method::GET, "/suppressions", None).await;
    assert_eq!(list["data"], json!(["hushed-user"]));

    send(
        &s,
        &key,
        "track",
        json!({"userId": "hushed-user", "event": "One"}),
    )
    .await;
    send(
        &s,
        &key,
        "batch",
        json!({"batch": [
            {"type": "track", "userId": "hushed-user", "event": "Two"},
            {"type": "track", "userId": "free", "event": "Two"},
            {"type": "identify", "userId": "hushed-user"},
            // An alias naming the suppressed id must not link it to a new one.
            {"type": "alias", "previousId": "hushed-user", "userId": "new-name"},
        ]}),
    )
    .await;
    rx.wait_for(1, Duration::from_secs(10)).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(users_received(&rx), vec!["free".to_string()]);
    assert!(!stored_mentions(&s, &src, "hushed-user").await);
    assert!(!stored_mentions(&s, &src, "new-name").await);
    assert!(stored_mentions(&s, &src, "free").await);
    let day: Value = eventually(10, || async {
        let (_, usage) = s
            .admin(Method::GET, &format!("/sources/{src}/usage"), None)
            .await;
        let today = usage["data"].as_array().and_then(|d| d.last().cloned())?;
        (today["suppressed"] == json!(4)).then_some(today)
    })
    .await;
    assert_eq!(day["events"], json!(1));
    assert_eq!(day["received"], json!(5));
    assert_eq!(day["api_calls"], json!(2));
}

#[tokio::test]
async fn unsuppress_lets_data_sent_afterwards_flow_normally() {
    let (s, _dir) = start().await;
    let (src, key) = s.source("app").await;
    let rx = Receiver::start().await;
    hook(&s, &[&src], &rx).await;
    regulate(&s, "SUPPRESS_ONLY", &["back"], None).await;
    send(
        &s,
        &key,
        "track",
        json!({"userId": "back", "event": "Before"}),
    )
    .await;
    finished(&s, &regulate(&s, "UNSUPPRESS", &["back"], None).await).await;
    let (_, list) = s.admin(Method::GET, "/suppressions", None).await;
    assert_eq!(list["data"], json!([]));
    send(
        &s,
        &key,
        "track",
        json!({"userId": "back", "event": "After"}),
    )
    .await;
    rx.wait_for(1, Duration::from_secs(10)).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let events: Vec<String> = rx
        .requests()
        .iter()
        .filter_map(|r| serde_json::from_slice::<Value>(&r.body).ok())
        .filter_map(|b| b["event"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(events, vec!["After".to_string()]);
}
