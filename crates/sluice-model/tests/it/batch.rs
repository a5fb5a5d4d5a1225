//! Batch-level defaults, write key extraction and the path's type.

use serde_json::json;
use sluice_model::{EventType, destination_enabled};

use crate::support::{batch, field, keys, one, single};

#[test]
fn batch_context_is_merged_into_items_and_item_keys_win() {
    let body = r#"{
        "batch": [
            {"type":"identify","userId":"u","context":{"locale":"fr","library":{"name":"mine"}}},
            {"type":"identify","userId":"v"}
        ],
        "context": {"library":{"name":"analytics-go","version":"2.1.0"},"timezone":"UTC"}
    }"#;
    let events = batch(body).expect("accepted").events;
    assert_eq!(
        field(&events[0], "context"),
        json!({"locale":"fr","library":{"name":"mine"},"timezone":"UTC","ip":"203.0.113.7"})
    );
    assert_eq!(
        field(&events[1], "context"),
        json!({"library":{"name":"analytics-go","version":"2.1.0"},"timezone":"UTC","ip":"203.0.113.7"})
    );
}

#[test]
fn merge_is_shallow() {
    let body = r#"{"batch":[{"type":"identify","userId":"u","context":{"app":{"name":"a"}}}],
        "context":{"app":{"version":"1"}}}"#;
    let event = one(batch(body));
    assert_eq!(field(&event, "context")["app"], json!({"name":"a"}));
}

#[test]
fn batch_integrations_are_merged_and_item_keys_win() {
    let body = r#"{"batch":[
            {"type":"identify","userId":"u","integrations":{"Webhooks":true}},
            {"type":"identify","userId":"v"}
        ],
        "integrations":{"All":false,"Webhooks":false}}"#;
    let events = batch(body).expect("accepted").events;
    let first = events[0].integrations.as_ref();
    let second = events[1].integrations.as_ref();
    assert_eq!(first, json!({"Webhooks":true,"All":false}).as_object());
    assert_eq!(
        events[0].body().get("integrations"),
        Some(&json!({"Webhooks":true,"All":false}))
    );
    assert!(destination_enabled(first, "Webhooks"));
    assert!(!destination_enabled(second, "Webhooks"));
}

#[test]
fn batch_write_key_is_returned_and_removed_from_items() {
    let body = r#"{"writeKey":"wk_batch","batch":[{"type":"identify","userId":"u","writeKey":"wk_item"}]}"#;
    let envelope = batch(body).expect("accepted");
    assert_eq!(envelope.write_key.as_deref(), Some("wk_batch"));
    assert!(!envelope.events[0].body().contains_key("writeKey"));
}

#[test]
fn first_item_write_key_is_used_when_batch_has_none() {
    let body = r#"{"batch":[
        {"type":"identify","userId":"u"},
        {"type":"identify","userId":"u","writeKey":"wk_1"},
        {"type":"identify","userId":"u","writeKey":"wk_2"}]}"#;
    let envelope = batch(body).expect("accepted");
    assert_eq!(envelope.write_key.as_deref(), Some("wk_1"));
    assert!(
        envelope
            .events
            .iter()
            .all(|e| !e.body().contains_key("writeKey"))
    );
}

#[test]
fn no_write_key_anywhere_gives_none() {
    let envelope = batch(r#"{"batch":[{"type":"identify","userId":"u"}]}"#).expect("accepted");
    assert_eq!(envelope.write_key, None);
}

#[test]
fn single_call_write_key_is_returned_and_removed_keeping_key_order() {
    let envelope = single(
        EventType::Identify,
        r#"{"userId":"u","writeKey":"wk","traits":{}}"#,
    )
    .expect("ok");
    assert_eq!(envelope.write_key.as_deref(), Some("wk"));
    assert_eq!(&keys(&envelope.events[0])[..2], ["userId", "traits"]);
}

#[test]
fn batch_message_id_is_not_an_item_message_id() {
    let body = r#"{"messageId":"batch-1","batch":[
        {"type":"identify","userId":"u"},{"type":"identify","userId":"v"}]}"#;
    let events = batch(body).expect("accepted").events;
    assert_ne!(events[0].message_id, "batch-1");
    assert_ne!(events[0].message_id, events[1].message_id);
}

#[test]
fn single_endpoint_path_type_overrides_body_type() {
    let event = one(single(
        EventType::Track,
        r#"{"type":"identify","userId":"u","event":"Clicked"}"#,
    ));
    assert_eq!(event.event_type, EventType::Track);
    assert_eq!(field(&event, "type"), "track");
    assert_eq!(keys(&event)[0], "type");
}

#[test]
fn analytics_go_v2_batch_is_accepted() {
    let body = r#"{"batch":[{"type":"track","messageId":"6e2a1c4b-1","timestamp":"2009-11-10T23:00:00+0000",
        "userId":"1","event":"Download","properties":{"app":"x"}}],
        "context":{"library":{"name":"analytics-go","version":"2.1.0"}},
        "messageId":"b-1","sentAt":"2009-11-10T23:00:00+0000"}"#;
    let event = one(batch(body));
    assert_eq!(event.message_id, "6e2a1c4b-1");
    assert_eq!(field(&event, "context")["library"]["name"], "analytics-go");
    assert_eq!(
        field(&event, "originalTimestamp"),
        "2009-11-10T23:00:00.000Z"
    );
    assert_eq!(field(&event, "sentAt"), "2009-11-10T23:00:00.000Z");
    assert_eq!(field(&event, "timestamp"), "2024-05-06T19:11:01.266Z");
}

#[test]
fn lone_surrogates_are_repaired_not_rejected() {
    let body = r#"{"batch":[{"type":"track","userId":"u","event":"cut \ud83d","properties":{"ok":"\ud83d\ude00","lit":"\\udc00"}}]}"#;
    let event = one(batch(body));
    assert_eq!(field(&event, "event"), "cut \u{fffd}");
    assert_eq!(field(&event, "properties")["ok"], "😀");
    assert_eq!(field(&event, "properties")["lit"], "\\udc00");
}

#[test]
fn duplicate_envelope_keys_are_refused_and_other_duplicates_keep_the_last_value() {
    for key in ["batch", "context", "integrations", "sentAt", "writeKey"] {
        let body = match key {
            "batch" => r#"{"batch":[],"batch":[]}"#.to_owned(),
            _ => format!(r#"{{"batch":[],"{key}":null,"{key}":null}}"#),
        };
        let error = crate::support::rejected(batch(&body));
        assert_eq!(error.code, sluice_model::ErrorCode::InvalidJson, "{key}");
        assert!(
            error
                .message
                .starts_with(&format!("invalid request body: duplicate field `{key}`")),
            "{}",
            error.message
        );
    }
    let body = r#"{"messageId":"a","messageId":"b","batch":[
        {"type":"identify","userId":"first","userId":"last","context":{"a":1,"a":2}}]}"#;
    let event = one(batch(body));
    assert_eq!(field(&event, "userId"), "last");
    assert_eq!(field(&event, "context")["a"], 2);
}
