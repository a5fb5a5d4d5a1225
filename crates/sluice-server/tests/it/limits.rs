//! Each limit exactly at its boundary and one byte over.

use serde_json::{Value, json};

use crate::support::TestServer;

/// A track call whose JSON text is exactly `size` bytes.
fn track_of_size(size: usize) -> String {
    let base = json!({"type": "track", "userId": "u", "event": "e", "properties": {"pad": ""}})
        .to_string();
    assert!(size >= base.len());
    let pad = "x".repeat(size - base.len());
    let out = json!({"type": "track", "userId": "u", "event": "e", "properties": {"pad": pad}})
        .to_string();
    assert_eq!(out.len(), size);
    out
}

/// A batch body of exactly `size` bytes made of items under 32 KiB.
fn batch_of_size(size: usize) -> String {
    let item = 30_000;
    let mut items: Vec<String> = Vec::new();
    let frame = |items: &[String]| format!("{{\"batch\":[{}]}}", items.join(","));
    while frame(&items).len() + item + 1 < size {
        items.push(track_of_size(item));
    }
    let rest = size - frame(&items).len() - usize::from(!items.is_empty());
    items.push(track_of_size(rest));
    let out = frame(&items);
    assert_eq!(out.len(), size);
    out
}

fn code(body: &Value) -> &str {
    body["code"].as_str().unwrap_or("")
}

#[tokio::test]
async fn single_call_of_32_kib_is_accepted_and_one_byte_more_is_not() {
    let s = TestServer::start().await;
    let (src, key) = s.source("web").await;
    let (status, _) = s
        .collect("/v1/track", Some(&key), track_of_size(32 * 1024))
        .await;
    assert_eq!(status, 200);
    let (status, body) = s
        .collect("/v1/track", Some(&key), track_of_size(32 * 1024 + 1))
        .await;
    assert_eq!((status, code(&body)), (400, "body_too_large"));
    assert_eq!(s.events(&src).await.len(), 1);
}

#[tokio::test]
async fn batch_item_of_32_kib_is_accepted_and_one_byte_more_is_not() {
    let s = TestServer::start().await;
    let (_, key) = s.source("web").await;
    let ok = format!("{{\"batch\":[{}]}}", track_of_size(32 * 1024));
    assert_eq!(s.collect("/v1/batch", Some(&key), ok).await.0, 200);
    let over = format!("{{\"batch\":[{}]}}", track_of_size(32 * 1024 + 1));
    let (status, body) = s.collect("/v1/batch", Some(&key), over).await;
    assert_eq!((status, code(&body)), (400, "event_too_large"));
    assert!(body["message"].as_str().unwrap_or("").contains("batch[0]"));
}

#[tokio::test]
async fn batch_of_500_kib_is_accepted_and_one_byte_more_is_not() {
    let s = TestServer::start().await;
    let (_, key) = s.source("web").await;
    assert_eq!(
        s.collect("/v1/batch", Some(&key), batch_of_size(500 * 1024))
            .await
            .0,
        200
    );
    let (status, body) = s
        .collect("/v1/batch", Some(&key), batch_of_size(500 * 1024 + 1))
        .await;
    assert_eq!((status, code(&body)), (400, "body_too_large"));
}

#[tokio::test]
async fn batch_of_2500_events_is_accepted_and_2501_is_not() {
    let s = TestServer::start().await;
    let (src, key) = s.source("web").await;
    let items = |n: usize| {
        let v: Vec<Value> = (0..n)
            .map(|_| json!({"type": "track", "userId": "u", "event": "e"}))
            .collect();
        json!({"batch": v}).to_string()
    };
    assert_eq!(s.collect("/v1/batch", Some(&key), items(2500)).await.0, 200);
    let (status, body) = s.collect("/v1/batch", Some(&key), items(2501)).await;
    assert_eq!((status, code(&body)), (400, "too_many_events"));
    let (_, usage) = s
        .admin(reqwest::Method::GET, &format!("/sources/{src}/usage"), None)
        .await;
    assert_eq!(usage["data"][0]["events"], json!(2500));
    assert_eq!(usage["data"][0]["api_calls"], json!(1));
}

#[tokio::test]
async fn batch_context_merged_past_the_item_limit_is_refused_and_nothing_is_stored() {
    let s = TestServer::start().await;
    let (src, key) = s.source("web").await;
    let items: Vec<Value> = (0..2500)
        .map(|_| json!({"type": "track", "userId": "u", "event": "e"}))
        .collect();
    let context = json!({"blob": "x".repeat(300 * 1024)});
    let body = json!({"batch": items, "context": context}).to_string();
    assert!(body.len() < 500 * 1024);
    let (status, body) = s.collect("/v1/batch", Some(&key), body).await;
    assert_eq!((status, code(&body)), (400, "event_too_large"), "{body}");
    let message = body["message"].as_str().unwrap_or("");
    assert!(
        message.starts_with("batch[0]: ") && message.contains("batch-level 'context' merged in"),
        "{message}"
    );
    assert!(s.events(&src).await.is_empty());
}

#[tokio::test]
async fn batch_context_nested_past_the_limit_once_merged_is_refused_and_nothing_is_stored() {
    let s = TestServer::start().await;
    let (src, key) = s.source("web").await;
    let deep = |levels: usize| format!("{}{}", "[".repeat(levels), "]".repeat(levels));
    let items =
        r#"{"type":"page","userId":"u","name":"P"},{"type":"track","userId":"u","event":"E"}"#;
    let batch = |levels| {
        format!(
            r#"{{"batch":[{items}],"context":{{"x":{}}}}}"#,
            deep(levels)
        )
    };
    let (status, body) = s.collect("/v1/batch", Some(&key), batch(126)).await;
    assert_eq!((status, code(&body)), (400, "invalid_json"), "{body}");
    assert!(s.events(&src).await.is_empty());
    // Merged to exactly the limit is accepted (the event listing nests the
    // events deeper still, so usage counts them).
    let (status, body) = s.collect("/v1/batch", Some(&key), batch(125)).await;
    assert_eq!(status, 200, "{body}");
    let (_, usage) = s
        .admin(reqwest::Method::GET, &format!("/sources/{src}/usage"), None)
        .await;
    assert_eq!(usage["data"][0]["events"], json!(2));
}
