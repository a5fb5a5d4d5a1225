//! Destination filters: each form, the filtered delivery record, the
//! signature over the filtered body, and the 400s.

use std::time::Duration;

use reqwest::Method;
use serde_json::{Value, json};
use sluice_testkit::{Receiver, RecordedRequest};

use crate::support::{TestServer, eventually};

const SECRET: &str = "whsec-filters-0123456789";

struct Setup {
    s: TestServer,
    key: String,
    dst: String,
    rx: Receiver,
}

async fn setup(filters: Value) -> Setup {
    let s = TestServer::start().await;
    let (src, key) = s.source("web").await;
    let rx = Receiver::start().await;
    let dst = s.webhook(&src, json!([rx.url()]), Some(SECRET)).await;
    let (status, body) = s
        .admin(
            Method::PUT,
            &format!("/destinations/{dst}/filters"),
            Some(filters),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    Setup { s, key, dst, rx }
}

async fn send(t: &Setup, path: &str, call: Value) {
    assert_eq!(
        t.s.collect(path, Some(&t.key), call.to_string()).await.0,
        200
    );
}

/// The delivery row of `message_id` once it is final.
async fn delivery(t: &Setup, message_id: &str) -> Value {
    eventually(10, || async {
        let (_, body) =
            t.s.admin(
                Method::GET,
                &format!("/deliveries?message_id={message_id}"),
                None,
            )
            .await;
        let row = body["data"].as_array()?.first()?.clone();
        (row["state"] != json!("pending")).then_some(row)
    })
    .await
}

fn received(rx: &Receiver, message_id: &str) -> Option<RecordedRequest> {
    rx.requests()
        .into_iter()
        .find(|r| r.header("x-sluice-message-id") == Some(message_id))
}

/// The body is signed as sent, and is what JSON.stringify(JSON.parse(body)) writes.
fn assert_signed_js_body(req: &RecordedRequest) -> Value {
    assert_eq!(
        req.header("x-signature"),
        Some(sluice_signing::sign(SECRET.as_bytes(), &req.body).as_str())
    );
    let parsed: Value = serde_json::from_slice(&req.body).unwrap();
    assert_eq!(
        sluice_signing::to_js_json(&parsed).as_bytes(),
        &req.body[..]
    );
    parsed
}

async fn assert_filtered(t: &Setup, message_id: &str, filter: &str) {
    let row = delivery(t, message_id).await;
    assert_eq!(row["state"], json!("filtered"), "{row}");
    assert_eq!(row["filter"], json!(filter));
    assert_eq!(
        row["last_error"],
        Value::Null,
        "a filtered delivery did not fail"
    );
    assert_eq!(row["destination_id"], json!(t.dst));
    assert!(received(&t.rx, message_id).is_none());
}

#[tokio::test]
async fn drop_by_type_list_records_the_delivery_as_filtered() {
    let t = setup(
        json!({"filters": [{"name": "no identifies", "action": "drop",
        "when": {"field": "type", "op": "in", "values": ["identify", "group"]}}]}),
    )
    .await;
    send(
        &t,
        "/v1/identify",
        json!({"userId": "u", "messageId": "m-id"}),
    )
    .await;
    send(
        &t,
        "/v1/track",
        json!({"userId": "u", "event": "E", "messageId": "m-tr"}),
    )
    .await;
    assert_eq!(delivery(&t, "m-tr").await["state"], json!("succeeded"));
    assert_signed_js_body(&received(&t.rx, "m-tr").expect("sent"));
    assert_filtered(&t, "m-id", "no identifies").await;
    let (_, filtered) =
        t.s.admin(
            Method::GET,
            &format!("/destinations/{}/deliveries?state=filtered", t.dst),
            None,
        )
        .await;
    assert_eq!(filtered["data"].as_array().map(Vec::len), Some(1));
    t.s.stop().await;
}

#[tokio::test]
async fn drop_by_event_name_not_in_list_sends_only_listed_events() {
    let t = setup(json!({"filters": [{"name": "orders only", "action": "drop",
        "when": {"field": "event", "op": "not_in", "values": ["Order Completed"]}}]}))
    .await;
    send(
        &t,
        "/v1/track",
        json!({"userId": "u", "event": "Clicked", "messageId": "m-click"}),
    )
    .await;
    send(
        &t,
        "/v1/track",
        json!({"userId": "u", "event": "Order Completed", "messageId": "m-order"}),
    )
    .await;
    assert_eq!(delivery(&t, "m-order").await["state"], json!("succeeded"));
    assert_signed_js_body(&received(&t.rx, "m-order").expect("sent"));
    assert_filtered(&t, "m-click", "orders only").await;
    t.s.stop().await;
}

#[tokio::test]
async fn drop_by_property_condition() {
    let t = setup(
        json!({"filters": [{"name": "no test orders", "action": "drop",
        "when": {"field": "properties.env", "op": "eq", "value": "test"}}]}),
    )
    .await;
    send(
        &t,
        "/v1/track",
        json!({"userId": "u", "event": "O", "messageId": "m-test",
                                 "properties": {"env": "test"}}),
    )
    .await;
    send(
        &t,
        "/v1/track",
        json!({"userId": "u", "event": "O", "messageId": "m-prod",
                                 "properties": {"env": "prod"}}),
    )
    .await;
    assert_eq!(delivery(&t, "m-prod").await["state"], json!("succeeded"));
    let prod = assert_signed_js_body(&received(&t.rx, "m-prod").expect("sent"));
    assert_eq!(prod["properties"], json!({"env": "prod"}));
    assert_filtered(&t, "m-test", "no test orders").await;
    t.s.stop().await;
}

#[tokio::test]
async fn dropped_properties_and_traits_are_absent_and_the_signature_covers_the_filtered_body() {
    let t = setup(
        json!({"filters": [{"name": "no pii", "action": "drop_fields",
        "fields": ["properties.email", "traits.ssn", "context.ip"]}]}),
    )
    .await;
    send(
        &t,
        "/v1/track",
        json!({"userId": "u", "event": "Buy", "messageId": "m-buy",
        "properties": {"email": "a@b.c", "total": 1.5, "name": "café ☕"}}),
    )
    .await;
    send(
        &t,
        "/v1/identify",
        json!({"userId": "u", "messageId": "m-who",
        "traits": {"ssn": "123", "plan": "pro"}}),
    )
    .await;
    let got = t.rx.wait_for(2, Duration::from_secs(10)).await;
    assert_eq!(got.len(), 2);
    let buy = assert_signed_js_body(&received(&t.rx, "m-buy").unwrap());
    assert_eq!(buy["properties"], json!({"total": 1.5, "name": "café ☕"}));
    assert!(buy["context"].get("ip").is_none());
    assert!(buy["context"].get("library").is_some() || buy["context"].is_object());
    let who = assert_signed_js_body(&received(&t.rx, "m-who").unwrap());
    assert_eq!(who["traits"], json!({"plan": "pro"}));
    // The stored event keeps every field: filters shape what one destination gets.
    let (_, events) = t.s.admin(Method::GET, "/sources", None).await;
    let src = events["data"][0]["id"].as_str().unwrap().to_owned();
    let stored = t.s.events(&src).await;
    let buy_stored = stored
        .iter()
        .find(|e| e["message_id"] == json!("m-buy"))
        .unwrap();
    assert_eq!(buy_stored["event"]["properties"]["email"], json!("a@b.c"));
    assert_eq!(delivery(&t, "m-buy").await["state"], json!("succeeded"));
    t.s.stop().await;
}

#[tokio::test]
async fn unusable_filters_are_a_400_naming_the_field() {
    let t = setup(json!({"filters": []})).await;
    let cases = [
        (
            json!({"filters": [{"name": "a", "action": "drop_fields", "fields": ["properties..x"]}]}),
            "filters[0].fields[0]",
        ),
        (
            json!({"filters": [{"name": "a", "action": "drop",
                             "when": {"field": "properties.", "op": "exists"}}]}),
            "filters[0].when.field",
        ),
        (
            json!({"filters": [{"name": "a", "action": "explode", "when": {}}]}),
            "filters[0].action",
        ),
        (
            json!({"filters": [{"name": "a", "action": "drop",
                             "when": {"field": "type", "op": "matches", "values": []}}]}),
            "filters[0].when.op",
        ),
        (
            json!({"filters": [{"name": "a", "action": "drop",
                             "when": {"field": "type", "op": "in", "values": ["track", "Group"]}}]}),
            "filters[0].when.values[1]",
        ),
        (json!({"filters": "none"}), "filters"),
    ];
    for (doc, field) in cases {
        let (status, body) =
            t.s.admin(
                Method::PUT,
                &format!("/destinations/{}/filters", t.dst),
                Some(doc.clone()),
            )
            .await;
        assert_eq!(status, 400, "{doc}");
        assert!(
            body["message"]
                .as_str()
                .unwrap()
                .starts_with(&format!("{field}:")),
            "{body}"
        );
    }
    let (status, body) =
        t.s.admin(
            Method::PUT,
            "/destinations/dst_nope/filters",
            Some(json!({"filters": []})),
        )
        .await;
    assert_eq!(status, 400);
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .starts_with("destination_id:"),
        "{body}"
    );
    let (status, body) =
        t.s.admin(
            Method::GET,
            &format!("/destinations/{}/filters", t.dst),
            None,
        )
        .await;
    assert_eq!((status, body), (200, json!({"filters": []})));
    t.s.stop().await;
}
