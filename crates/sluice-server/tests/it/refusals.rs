//! What a refused request tells the client: the batch item at fault.

use serde_json::json;

use crate::support::TestServer;

#[tokio::test]
async fn a_refused_batch_item_is_named_by_index_and_batch_level_errors_have_none() {
    let s = TestServer::start().await;
    let (src, key) = s.source("web").await;
    let too_big = "x".repeat(40_000);
    for (bad, index, code) in [
        (json!({"type": "track", "userId": "u"}), 2, "missing_field"),
        (json!({"type": "boom", "userId": "u"}), 1, "unknown_type"),
        (
            json!({"type": "track", "userId": "u", "event": too_big}),
            0,
            "event_too_large",
        ),
    ] {
        let mut items = vec![json!({"type": "track", "userId": "u", "event": "ok"}); 3];
        items.insert(index, bad);
        let batch = json!({ "batch": items });
        let (status, body) = s.collect("/v1/batch", Some(&key), batch.to_string()).await;
        assert_eq!(status, 400, "{body}");
        assert_eq!(body["code"], json!(code), "{body}");
        assert_eq!(body["index"], json!(index), "{body}");
    }
    let too_many =
        json!({"batch": vec![json!({"type": "track", "userId": "u", "event": "e"}); 2501]});
    let (status, body) = s
        .collect("/v1/batch", Some(&key), too_many.to_string())
        .await;
    assert_eq!(
        (status, body["code"].clone()),
        (400, json!("too_many_events"))
    );
    assert!(
        body.get("index").is_none(),
        "a batch-level error names no item: {body}"
    );
    let (status, body) = s
        .collect("/v1/track", Some(&key), json!({"userId": "u"}).to_string())
        .await;
    assert_eq!(status, 400);
    assert!(
        body.get("index").is_none(),
        "a single call names no item: {body}"
    );
    assert!(
        s.events(&src).await.is_empty(),
        "nothing may be half-accepted"
    );
}
