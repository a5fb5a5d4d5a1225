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

#[tokio::test]
async fn regulations_are_listed_newest_first_a_page_at_a_time() {
    let (s, _dir) = start().await;
    let mut made = Vec::new();
    for user in ["a", "b", "c"] {
        made.push(regulate(&s, "SUPPRESS_ONLY", &[user], None).await);
        // Newest first is by creation time, to the millisecond.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let ids = |page: &Value| -> Vec<String> {
        page["data"]
            .as_array()
            .map(|d| {
                d.iter()
                    .filter_map(|r| r["id"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let (_, first) = s.admin(Method::GET, "/regulations?limit=2", None).await;
    let cursor = first["next_before"]
        .as_str()
        .expect("a full page has a cursor");
    let (_, second) = s
        .admin(
            Method::GET,
            &format!("/regulations?limit=2&before={cursor}"),
            None,
        )
        .await;
    assert_eq!(second["next_before"], Value::Null);
    let mut walked = ids(&first);
    walked.extend(ids(&second));
    made.reverse();
    assert_eq!(walked, made, "newest first, each once");
    let (_, none) = s
        .admin(Method::GET, "/regulations?before=reg_unknown", None)
        .await;
    assert_eq!(none["data"], json!([]));
}

#[tokio::test]
async fn the_dashboard_lists_regulations_a_page_at_a_time() {
    let (s, _dir) = start().await;
    for n in 0..101 {
        regulate(&s, "SUPPRESS_ONLY", &[&format!("user-{n}")], None).await;
    }
    let cookie = crate::dashboard::session_cookie(&s).await;
    let http = crate::dashboard::client();
    let get = |path: String| {
        let req = http
            .get(s.url(&path))
            .header(reqwest::header::COOKIE, cookie.clone());
        async move { req.send().await.unwrap().text().await.unwrap() }
    };
    let rows = |html: &str| html.matches("href=\"/regulations/reg_").count();
    let first = get("/regulations".into()).await;
    assert_eq!(rows(&first), 100);
    let older = first
        .split("href=\"/regulations?before=")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a link to older regulations")
        .to_owned();
    let second = get(format!("/regulations?before={older}")).await;
    assert_eq!(rows(&second), 1);
    assert!(!second.contains("?before="), "nothing older");
}
