//! Required fields per type, the body's shape, and the error messages.

use serde_json::json;
use sluice_model::{ErrorCode, EventType};

use crate::support::{batch, field, one, rejected, single};

/// Rejects `item` as the fourth item of a batch and returns (code, message).
fn batch_error(item: &str) -> (ErrorCode, String) {
    let ok = r#"{"type":"identify","userId":"u"}"#;
    let body = format!(r#"{{"batch":[{ok},{ok},{ok},{item}]}}"#);
    let error = rejected(batch(&body));
    (error.code, error.message)
}

#[test]
fn every_type_but_alias_requires_user_or_anonymous_id() {
    for event_type in ["track", "identify", "page", "screen", "group"] {
        let item = format!(r#"{{"type":"{event_type}","event":"E","groupId":"g"}}"#);
        assert_eq!(
            batch_error(&item),
            (
                ErrorCode::MissingIdentity,
                format!("batch[3]: {event_type} requires 'userId' or 'anonymousId'")
            )
        );
    }
}

#[test]
fn empty_string_ids_do_not_count_as_identity() {
    let item = r#"{"type":"identify","userId":"","anonymousId":""}"#;
    assert_eq!(batch_error(item).0, ErrorCode::MissingIdentity);
}

#[test]
fn anonymous_id_alone_is_enough() {
    let event = one(single(EventType::Page, r#"{"anonymousId":"a1"}"#));
    assert_eq!(event.anonymous_id.as_deref(), Some("a1"));
    assert_eq!(event.user_id, None);
}

#[test]
fn numeric_ids_become_strings_in_event_and_body() {
    let event = one(single(
        EventType::Group,
        r#"{"userId":42,"anonymousId":1.5,"groupId":7}"#,
    ));
    assert_eq!(event.user_id.as_deref(), Some("42"));
    assert_eq!(event.anonymous_id.as_deref(), Some("1.5"));
    assert_eq!(field(&event, "userId"), json!("42"));
    assert_eq!(field(&event, "groupId"), json!("7"));
}

#[test]
fn numeric_ids_read_as_javascript_writes_them_and_integers_keep_every_digit() {
    for (sent, id) in [
        ("4242.0", "4242"),
        ("1E2", "100"),
        ("-0", "0"),
        ("-0.0", "0"),
        ("0.1", "0.1"),
        ("1e21", "1e+21"),
        ("-7", "-7"),
        ("12345678901234567890", "12345678901234567890"),
        ("-9223372036854775808", "-9223372036854775808"),
        ("18446744073709551615", "18446744073709551615"),
        // Beyond 64 bits an integer is a JavaScript number like any other.
        ("18446744073709551616", "18446744073709552000"),
        ("-9223372036854775809", "-9223372036854776000"),
        ("123456789012345678901234567890", "1.2345678901234568e+29"),
    ] {
        let event = one(single(
            EventType::Identify,
            &format!(r#"{{"userId":{sent}}}"#),
        ));
        assert_eq!(event.user_id.as_deref(), Some(id), "{sent}");
        assert_eq!(field(&event, "userId"), json!(id), "{sent}");
    }
}

#[test]
fn id_of_another_json_type_is_invalid() {
    let (code, message) = batch_error(r#"{"type":"identify","userId":{"id":1}}"#);
    assert_eq!(code, ErrorCode::InvalidField);
    assert_eq!(message, "batch[3]: 'userId' must be a string or a number");
}

#[test]
fn alias_requires_user_id() {
    assert_eq!(
        batch_error(r#"{"type":"alias","anonymousId":"a","previousId":"p"}"#),
        (
            ErrorCode::MissingIdentity,
            "batch[3]: alias requires 'userId'".into()
        )
    );
}

#[test]
fn alias_requires_previous_id() {
    assert_eq!(
        batch_error(r#"{"type":"alias","userId":"u"}"#),
        (
            ErrorCode::MissingField,
            "batch[3]: alias requires 'previousId'".into()
        )
    );
}

#[test]
fn alias_with_user_and_previous_id_is_accepted() {
    let event = one(single(
        EventType::Alias,
        r#"{"userId":"u","previousId":"p"}"#,
    ));
    assert_eq!(event.event_type, EventType::Alias);
    assert_eq!(field(&event, "previousId"), json!("p"));
}

#[test]
fn track_requires_event() {
    let missing = (
        ErrorCode::MissingField,
        "batch[3]: track requires 'event'".to_owned(),
    );
    assert_eq!(batch_error(r#"{"type":"track","userId":"u"}"#), missing);
    assert_eq!(
        batch_error(r#"{"type":"track","userId":"u","event":""}"#),
        missing
    );
    assert_eq!(
        batch_error(r#"{"type":"track","userId":"u","event":null}"#),
        missing
    );
}

#[test]
fn track_event_must_be_a_string() {
    assert_eq!(
        batch_error(r#"{"type":"track","userId":"u","event":5}"#),
        (
            ErrorCode::InvalidField,
            "batch[3]: 'event' must be a string".into()
        )
    );
}

#[test]
fn group_requires_group_id() {
    assert_eq!(
        batch_error(r#"{"type":"group","userId":"u"}"#),
        (
            ErrorCode::MissingField,
            "batch[3]: group requires 'groupId'".into()
        )
    );
}

#[test]
fn single_call_errors_carry_no_batch_prefix() {
    let error = rejected(single(EventType::Track, r#"{"userId":"u"}"#));
    assert_eq!(error.code, ErrorCode::MissingField);
    assert_eq!(error.message, "track requires 'event'");
}

#[test]
fn batch_item_without_type_is_missing_type() {
    assert_eq!(
        batch_error(r#"{"userId":"u"}"#),
        (
            ErrorCode::MissingType,
            "batch[3]: event requires a string 'type'".into()
        )
    );
    assert_eq!(
        batch_error(r#"{"type":1,"userId":"u"}"#).0,
        ErrorCode::MissingType
    );
}

#[test]
fn batch_item_with_unknown_type_is_rejected() {
    assert_eq!(
        batch_error(r#"{"type":"Track","userId":"u"}"#),
        (
            ErrorCode::UnknownType,
            "batch[3]: unknown type 'Track'".into()
        )
    );
}

#[test]
fn batch_item_that_is_not_an_object_is_rejected() {
    assert_eq!(
        batch_error("[1]"),
        (
            ErrorCode::InvalidField,
            "batch[3]: event must be a JSON object".into()
        )
    );
}

#[test]
fn first_invalid_item_rejects_the_whole_batch() {
    let body = r#"{"batch":[{"type":"identify","userId":"u"},{"type":"track","userId":"u"},{"type":"nope"}]}"#;
    let error = rejected(batch(body));
    assert_eq!(error.message, "batch[1]: track requires 'event'");
}

#[test]
fn missing_batch_array_is_invalid_field() {
    for body in [r#"{"items":[]}"#, r#"{"batch":{}}"#, r#"{"batch":null}"#] {
        let error = rejected(batch(body));
        assert_eq!(error.code, ErrorCode::InvalidField, "{body}");
        assert_eq!(error.message, "'batch' must be an array");
    }
}

#[test]
fn empty_batch_is_accepted_with_no_events() {
    assert!(
        batch(r#"{"batch":[]}"#)
            .expect("accepted")
            .events
            .is_empty()
    );
}

#[test]
fn invalid_json_reports_line_and_column() {
    let error = rejected(batch("{\"batch\":[\n  {\"type\":}\n]}"));
    assert_eq!(error.code, ErrorCode::InvalidJson);
    assert!(
        error.message.contains("line 2 column 11"),
        "{}",
        error.message
    );
}

#[test]
fn body_that_is_not_an_object_is_invalid_json() {
    for body in ["[]", "\"x\"", "null", "12"] {
        let error = rejected(single(EventType::Track, body));
        assert_eq!(error.code, ErrorCode::InvalidJson, "{body}");
        assert_eq!(error.message, "request body must be a JSON object");
        assert_eq!(rejected(batch(body)).code, ErrorCode::InvalidJson);
    }
}

#[test]
fn trailing_garbage_and_empty_body_are_invalid_json() {
    for body in ["", "{} x", "{\"userId\":\"u\",}"] {
        assert_eq!(
            rejected(single(EventType::Identify, body)).code,
            ErrorCode::InvalidJson,
            "{body:?}"
        );
    }
}

#[test]
fn invalid_utf8_is_invalid_json() {
    let body = b"{\"userId\":\"\xff\"}";
    let error = sluice_model::parse_request(
        sluice_model::Endpoint::Single(EventType::Identify),
        body,
        &crate::support::ctx(),
        &sluice_model::Limits::default(),
    );
    assert_eq!(rejected(error).code, ErrorCode::InvalidJson);
}

#[test]
fn non_object_context_or_integrations_is_rejected() {
    assert_eq!(
        batch_error(r#"{"type":"identify","userId":"u","context":"x"}"#),
        (
            ErrorCode::InvalidField,
            "batch[3]: 'context' must be an object".into()
        )
    );
    let error = rejected(batch(r#"{"batch":[],"integrations":[true]}"#));
    assert_eq!(error.message, "'integrations' must be an object");
}

#[test]
fn nesting_beyond_the_parser_limit_is_invalid_json_without_overflow() {
    let depth = 200_000;
    let deep = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let item = format!(r#"{{"type":"identify","userId":"u","traits":{{"d":{deep}}}}}"#);
    let limits = sluice_model::Limits {
        max_call_bytes: 1 << 20,
        max_batch_bytes: 1 << 20,
        max_batch_events: 10,
    };
    let error = rejected(crate::support::batch_with(
        &format!(r#"{{"batch":[{item}]}}"#),
        &limits,
    ));
    assert_eq!(error.code, ErrorCode::InvalidJson);
    assert!(
        error
            .message
            .starts_with("batch[0]: invalid JSON: recursion limit exceeded"),
        "{}",
        error.message
    );
    let error = rejected(crate::support::single_with(
        EventType::Identify,
        &item,
        &limits,
    ));
    assert_eq!(error.code, ErrorCode::InvalidJson);
}

/// A call nested `levels` deep, counting the call's own object as the first.
fn nested_call(levels: usize) -> String {
    let inner = levels - 1;
    format!(
        r#"{{"userId":"u","event":"e","properties":{}{}}}"#,
        "[".repeat(inner),
        "]".repeat(inner)
    )
}

#[test]
fn calls_nest_up_to_the_documented_depth() {
    let deepest = 127;
    one(single(EventType::Track, &nested_call(deepest)));
    let error = rejected(single(EventType::Track, &nested_call(deepest + 1)));
    assert_eq!(error.code, ErrorCode::InvalidJson);
    assert!(
        error.message.contains("recursion limit exceeded"),
        "{}",
        error.message
    );
}

#[test]
fn batch_items_nest_as_deep_as_single_calls() {
    let item = |levels| nested_call(levels).replacen('{', r#"{"type":"track","#, 1);
    let deepest = 127;
    let body = format!(r#"{{"batch":[{}]}}"#, item(deepest));
    assert_eq!(
        crate::support::batch(&body).map(|e| e.events.len()).ok(),
        Some(1)
    );
    let error = rejected(batch(&format!(r#"{{"batch":[{}]}}"#, item(deepest + 1))));
    assert!(
        error.message.contains("recursion limit exceeded"),
        "{}",
        error.message
    );
}
