//! The observed source schema: what a mixed load records, sorting and
//! paging, and the per-source cap.

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{TestServer, eventually, test_config};

/// A server whose schema is flushed every 50 ms, capped at `cap` entries.
async fn server(cap: usize) -> (TestServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = test_config(dir.path());
    config.schema.flush_interval_ms = 50;
    config.schema.max_entries_per_source = cap;
    (TestServer::start_with(config).await, dir)
}

async fn schema(s: &TestServer, src: &str, query: &str) -> Value {
    let (status, body) = s
        .admin(Method::GET, &format!("/sources/{src}/schema{query}"), None)
        .await;
    assert_eq!(status, 200, "{body}");
    body
}

fn find<'a>(page: &'a Value, kind: &str, name: &str, property: Option<&str>) -> Option<&'a Value> {
    page["data"].as_array()?.iter().find(|e| {
        e["kind"] == json!(kind)
            && e["name"] == json!(name)
            && property.is_none_or(|p| e["property"] == json!(p))
    })
}

#[tokio::test]
async fn mixed_load_records_names_traits_and_property_types_with_volumes() {
    let (s, _dir) = server(1000).await;
    let (src, key) = s.source("web").await;
    let batch = json!({"batch": [
        {"type": "track", "userId": "u", "event": "Order Completed", "properties": {"total": 10, "coupon": "X"}},
        {"type": "track", "userId": "u", "event": "Order Completed", "properties": {"total": "10"}},
        {"type": "track", "userId": "u", "event": "Signed Up"},
        {"type": "page", "userId": "u", "name": "Home"},
        {"type": "screen", "userId": "u", "name": "Settings"},
        {"type": "identify", "userId": "u", "traits": {"email": "a@b.c", "age": 30}},
        {"type": "group", "userId": "u", "groupId": "g", "traits": {"plan": "pro"}},
        {"type": "alias", "userId": "u", "previousId": "p"}
    ]});
    assert_eq!(
        s.collect("/v1/batch", Some(&key), batch.to_string())
            .await
            .0,
        200
    );

    let page = eventually(10, || async {
        let page = schema(&s, &src, "?limit=100").await;
        (page["total"] == json!(9)).then_some(page)
    })
    .await;
    let order = find(&page, "track", "Order Completed", None).expect("event name");
    assert_eq!(order["volume_24h"], json!(2));
    assert_eq!(order["volume_7d"], json!(2));
    assert_eq!(order["volume_30d"], json!(2));
    assert!(order["first_seen"].is_string() && order["last_seen"].is_string());
    let total = find(&page, "property", "Order Completed", Some("total")).expect("property");
    assert_eq!(total["types"], json!(["number", "string"]));
    assert_eq!(total["volume_24h"], json!(2));
    assert!(find(&page, "property", "Order Completed", Some("coupon")).is_some());
    assert!(find(&page, "track", "Signed Up", None).is_some());
    assert!(find(&page, "page", "Home", None).is_some());
    assert!(find(&page, "screen", "Settings", None).is_some());
    let age = find(&page, "identify_trait", "age", None).expect("trait");
    assert_eq!(age["types"], json!(["number"]));
    assert!(find(&page, "group_trait", "plan", None).is_some());
    assert_eq!(page["overflow"], json!(0));

    // Sorting and paging.
    let top = schema(&s, &src, "?sort=volume_24h&limit=1").await;
    assert_eq!(top["data"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        top["data"][0]["volume_24h"],
        json!(2),
        "descending by default"
    );
    assert_eq!(top["next_offset"], json!(1));
    let by_name = schema(&s, &src, "?kind=track&sort=name&order=desc").await;
    let names: Vec<&str> = by_name["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert_eq!(names, ["Signed Up", "Order Completed"]);
    let last = schema(&s, &src, "?kind=property&offset=1&limit=5").await;
    assert_eq!(last["total"], json!(2));
    assert_eq!(last["data"].as_array().map(Vec::len), Some(1));
    assert_eq!(last["next_offset"], Value::Null);

    for bad in ["?sort=size", "?order=up", "?kind=events", "?offset=-1"] {
        let (status, body) = s
            .admin(Method::GET, &format!("/sources/{src}/schema{bad}"), None)
            .await;
        assert_eq!(status, 400, "{bad}: {body}");
        assert_eq!(body["code"], json!("invalid_query"));
    }
    s.stop().await;
}

#[tokio::test]
async fn cardinality_cap_keeps_the_first_entries_and_counts_overflow() {
    let (s, _dir) = server(5).await;
    let (src, key) = s.source("noisy").await;
    let calls: Vec<Value> = (0..12)
        .map(|i| json!({"type": "track", "userId": "u", "event": format!("Event {i}")}))
        .collect();
    let batch = json!({"batch": calls});
    assert_eq!(
        s.collect("/v1/batch", Some(&key), batch.to_string())
            .await
            .0,
        200
    );
    let page = eventually(10, || async {
        let page = schema(&s, &src, "").await;
        (page["overflow"] == json!(7)).then_some(page)
    })
    .await;
    assert_eq!(page["total"], json!(5), "no more than the cap is kept");

    // Known entries keep counting; new ones keep overflowing, across flushes.
    let again = json!({"batch": [
        {"type": "track", "userId": "u", "event": "Event 0"},
        {"type": "track", "userId": "u", "event": "Event 99"}
    ]});
    assert_eq!(
        s.collect("/v1/batch", Some(&key), again.to_string())
            .await
            .0,
        200
    );
    let page = eventually(10, || async {
        let page = schema(&s, &src, "?limit=100").await;
        (page["overflow"] == json!(8)).then_some(page)
    })
    .await;
    assert_eq!(page["total"], json!(5));
    let first = find(&page, "track", "Event 0", None).expect("kept");
    assert_eq!(first["volume_24h"], json!(2));
    assert!(find(&page, "track", "Event 99", None).is_none());
    // Every event is still stored: the cap bounds the schema, not ingest.
    assert_eq!(s.events(&src).await.len(), 14);
    s.stop().await;
}
