//! The stored text (`Event::json`): the client's values kept as sent, the
//! server's keys set, and input a raw scan alone would let through refused.

use serde_json::{Value, json};
use sluice_model::{ErrorCode, EventType};

use crate::support::{batch, field, keys, one, rejected, single};

#[test]
fn stored_text_keeps_client_values_and_is_compact_at_the_top_level() {
    let event = one(single(
        EventType::Track,
        r#"{ "userId" : "u", "event":"E", "properties" : {"n": 1.50, "s":"\u0041"} }"#,
    ));
    assert!(
        event
            .json
            .starts_with(r#"{"userId":"u","event":"E","properties":{"n": 1.50, "s":"\u0041"},"type":"track","messageId":""#),
        "{}",
        event.json
    );
    assert_eq!(field(&event, "properties"), json!({"n":1.5,"s":"A"}));
}

#[test]
fn duplicate_top_level_key_keeps_first_position_and_last_value() {
    let event = one(single(
        EventType::Identify,
        r#"{"traits":1,"userId":"u","traits":{"a":2}}"#,
    ));
    assert_eq!(&keys(&event)[..2], ["traits", "userId"]);
    assert_eq!(field(&event, "traits"), json!({"a":2}));
}

#[test]
fn escaped_keys_are_decoded_and_written_escaped() {
    let event = one(single(
        EventType::Identify,
        r#"{"user\u0049d":"u","a\"b":1,"line\nbreak":2}"#,
    ));
    assert_eq!(event.user_id.as_deref(), Some("u"));
    assert_eq!(&keys(&event)[..3], ["userId", "a\"b", "line\nbreak"]);
    let parsed: Value = serde_json::from_str(&event.json).expect("stored text is JSON");
    assert_eq!(parsed["a\"b"], 1);
}

#[test]
fn context_is_opened_one_level_and_ip_appended() {
    let event = one(single(
        EventType::Identify,
        r#"{"userId":"u","context":{"page":{"url":"x"},"locale":"fr","locale":"de"}}"#,
    ));
    assert_eq!(
        field(&event, "context"),
        json!({"page":{"url":"x"},"locale":"de","ip":"203.0.113.7"})
    );
    assert!(
        event
            .json
            .contains(r#""context":{"page":{"url":"x"},"locale":"de","ip":"#)
    );
}

#[test]
fn numbers_with_exponents_are_accepted_when_in_range() {
    let event = one(batch(
        r#"{"batch":[{"type":"identify","userId":"u","traits":{"a":1e3,"b":2E-5}}]}"#,
    ));
    assert_eq!(field(&event, "traits"), json!({"a":1000.0,"b":0.00002}));
}

#[test]
fn nested_number_out_of_range_is_invalid_json() {
    let error = rejected(batch(
        r#"{"batch":[{"type":"identify","userId":"u","traits":{"a":[1e400]}}]}"#,
    ));
    assert_eq!(error.code, ErrorCode::InvalidJson);
    assert!(
        error
            .message
            .starts_with("batch[0]: invalid JSON: number out of range"),
        "{}",
        error.message
    );
    let long = "9".repeat(400);
    let error = rejected(single(
        EventType::Identify,
        &format!(r#"{{"userId":"u","traits":{{"a":{long}}}}}"#),
    ));
    assert_eq!(error.code, ErrorCode::InvalidJson);
}

#[test]
fn single_body_syntax_errors_keep_their_position() {
    let error = rejected(single(EventType::Identify, r#"{"userId":"u","x":[1,]}"#));
    assert_eq!(error.code, ErrorCode::InvalidJson);
    assert_eq!(
        error.message,
        "invalid JSON: trailing comma at line 1 column 22"
    );
    let error = rejected(single(EventType::Identify, "[1]"));
    assert_eq!(error.message, "request body must be a JSON object");
}

#[test]
fn integrations_are_parsed_for_routing_and_stored_as_sent() {
    let event = one(single(
        EventType::Identify,
        r#"{"userId":"u","integrations":{"All":false, "Webhooks":true}}"#,
    ));
    assert_eq!(
        event.integrations.as_ref(),
        json!({"All":false,"Webhooks":true}).as_object()
    );
    assert!(
        event
            .json
            .contains(r#""integrations":{"All":false, "Webhooks":true}"#)
    );
}

#[test]
fn large_batch_context_is_merged_under_a_large_item_context() {
    let batch_ctx: serde_json::Map<String, Value> =
        (0..40).map(|i| (format!("k{i}"), json!(i))).collect();
    let item_ctx: serde_json::Map<String, Value> =
        (30..60).map(|i| (format!("k{i}"), json!("own"))).collect();
    let body = json!({
        "batch": [{"type":"identify","userId":"u","context": item_ctx}],
        "context": batch_ctx,
    });
    let event = one(batch(&body.to_string()));
    let context = field(&event, "context");
    let keys: Vec<&String> = context.as_object().expect("object").keys().collect();
    assert_eq!(keys.len(), 61);
    assert_eq!(keys[0], "k30");
    assert_eq!(keys[30], "k0");
    assert_eq!(keys[60], "ip");
    assert_eq!(context["k35"], "own");
    assert_eq!(context["k5"], 5);
}
