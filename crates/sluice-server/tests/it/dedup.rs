//! A resent batch is answered 200 and delivered once: the collection API
//! drops a messageId its source committed within the window, and counts it.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use sluice_testkit::Receiver;

use crate::support::{TestServer, metric};

fn batch(ids: &[&str]) -> String {
    let batch: Vec<Value> = ids
        .iter()
        .map(|id| json!({"type": "track", "userId": "u1", "event": "Signed Up", "messageId": id}))
        .collect();
    json!({ "batch": batch }).to_string()
}

#[tokio::test]
async fn a_resent_batch_is_answered_200_and_delivered_once() {
    let s = TestServer::start().await;
    let (src, key) = s.source("web").await;
    let rx = Receiver::start().await;
    s.webhook(&src, json!([{ "url": rx.url() }]), None).await;

    let first = s
        .collect("/v1/batch", Some(&key), batch(&["a", "b", "c"]))
        .await;
    assert_eq!(first.0, 200, "{}", first.1);
    // The client missed the answer: the same batch again, with one new
    // message, and a single call repeating one of them.
    let again = s
        .collect("/v1/batch", Some(&key), batch(&["a", "b", "c", "d"]))
        .await;
    assert_eq!(again.0, 200, "{}", again.1);
    assert_eq!(again.1, json!({"success": true}));
    let single = json!({"userId": "u1", "event": "Signed Up", "messageId": "b"});
    assert_eq!(
        s.collect("/v1/track", Some(&key), single.to_string())
            .await
            .0,
        200
    );
    // A batch repeating a messageId within itself keeps the first.
    assert_eq!(
        s.collect("/v1/batch", Some(&key), batch(&["e", "e"]))
            .await
            .0,
        200
    );

    let got = rx.wait_for(5, Duration::from_secs(10)).await;
    // Time for any second delivery to arrive, were one scheduled.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut ids: Vec<String> = rx
        .requests()
        .iter()
        .map(|r| r.header("x-sluice-message-id").unwrap_or("").to_owned())
        .collect();
    ids.sort();
    assert_eq!(ids, ["a", "b", "c", "d", "e"], "{} received", got.len());
    assert_eq!(s.events(&src).await.len(), 5, "stored once each");

    let scrape = s.metrics().await;
    assert_eq!(metric(&scrape, "sluice_events_duplicate_total"), 5.0);
    assert_eq!(metric(&scrape, "sluice_events_accepted_total"), 5.0);
    let (status, usage) = s
        .admin(Method::GET, &format!("/sources/{src}/usage"), None)
        .await;
    assert_eq!(status, 200, "{usage}");
    let today = &usage["data"][0];
    assert_eq!(
        (&today["api_calls"], &today["events"], &today["duplicates"]),
        (&json!(4), &json!(5), &json!(5))
    );
}
