//! Size and count limits: exactly at each limit passes, one over fails.

use sluice_model::{ErrorCode, EventType, Limits};

use crate::support::{batch, batch_with, padded, rejected, single, single_with, track_call};

const SMALL: Limits = Limits {
    max_call_bytes: 200,
    max_batch_bytes: 1000,
    max_batch_events: 3,
};

#[test]
fn single_call_exactly_at_default_limit_is_accepted() {
    let max = Limits::default().max_call_bytes;
    let envelope = single(EventType::Track, &track_call(max)).expect("accepted");
    assert_eq!(envelope.events.len(), 1);
}

#[test]
fn single_call_one_byte_over_default_limit_is_rejected() {
    let max = Limits::default().max_call_bytes;
    let error = rejected(single(EventType::Track, &track_call(max + 1)));
    assert_eq!(error.code, ErrorCode::BodyTooLarge);
    assert_eq!(
        error.message,
        format!("request body is {} bytes, over the limit of {max}", max + 1)
    );
}

#[test]
fn oversized_body_is_rejected_before_parsing() {
    let garbage = "{".repeat(SMALL.max_call_bytes + 1);
    let error = rejected(single_with(EventType::Track, &garbage, &SMALL));
    assert_eq!(error.code, ErrorCode::BodyTooLarge);
}

#[test]
fn batch_body_exactly_at_default_limit_is_accepted() {
    let max = Limits::default().max_batch_bytes;
    let body = padded(
        &format!(r#"{{"batch":[{}],"pad":""#, track_call(100)),
        r#""}"#,
        max,
    );
    assert_eq!(body.len(), max);
    assert_eq!(batch(&body).expect("accepted").events.len(), 1);
}

#[test]
fn batch_body_one_byte_over_default_limit_is_rejected() {
    let max = Limits::default().max_batch_bytes;
    let body = padded(r#"{"batch":[],"pad":""#, r#""}"#, max + 1);
    let error = rejected(batch(&body));
    assert_eq!(error.code, ErrorCode::BodyTooLarge);
}

#[test]
fn batch_limit_applies_to_batch_endpoint_and_call_limit_to_single() {
    let body = padded(r#"{"batch":[],"pad":""#, r#""}"#, SMALL.max_call_bytes + 1);
    assert!(batch_with(&body, &SMALL).is_ok());
}

#[test]
fn batch_item_exactly_at_call_limit_is_accepted() {
    let item = track_call(SMALL.max_call_bytes);
    let body = format!("{{\"batch\": [ {item} ,\n{item}\n]}}");
    assert_eq!(batch_with(&body, &SMALL).expect("accepted").events.len(), 2);
}

#[test]
fn batch_item_one_byte_over_call_limit_is_rejected_with_its_index() {
    let ok = track_call(SMALL.max_call_bytes);
    let over = track_call(SMALL.max_call_bytes + 1);
    let body = format!(r#"{{"batch":[{ok},{over}]}}"#);
    let error = rejected(batch_with(&body, &SMALL));
    assert_eq!(error.code, ErrorCode::EventTooLarge);
    assert_eq!(
        error.message,
        format!(
            "batch[1]: event is {} bytes, over the limit of {}",
            SMALL.max_call_bytes + 1,
            SMALL.max_call_bytes
        )
    );
}

#[test]
fn batch_with_exactly_max_events_is_accepted() {
    let items = vec![track_call(60); SMALL.max_batch_events].join(",");
    let envelope = batch_with(&format!(r#"{{"batch":[{items}]}}"#), &SMALL).expect("accepted");
    assert_eq!(envelope.events.len(), SMALL.max_batch_events);
}

#[test]
fn batch_with_one_event_over_max_is_rejected() {
    let items = vec![track_call(60); SMALL.max_batch_events + 1].join(",");
    let error = rejected(batch_with(&format!(r#"{{"batch":[{items}]}}"#), &SMALL));
    assert_eq!(error.code, ErrorCode::TooManyEvents);
    assert_eq!(error.message, "batch has 4 events, over the limit of 3");
}

#[test]
fn default_limit_allows_2500_events() {
    let item = r#"{"type":"identify","userId":"u"}"#;
    let items = vec![item; 2500].join(",");
    let envelope = batch(&format!(r#"{{"batch":[{items}]}}"#)).expect("accepted");
    assert_eq!(envelope.events.len(), 2500);
    let items = vec![item; 2501].join(",");
    let error = rejected(batch(&format!(r#"{{"batch":[{items}]}}"#)));
    assert_eq!(error.code, ErrorCode::TooManyEvents);
}

#[test]
fn item_size_counts_raw_text_including_inner_whitespace() {
    let spaced = padded(
        r#"{ "type" : "track", "event" : "E", "userId" : "u", "pad" : ""#,
        r#"" }"#,
        SMALL.max_call_bytes + 1,
    );
    let error = rejected(batch_with(&format!(r#"{{"batch":[{spaced}]}}"#), &SMALL));
    assert_eq!(error.code, ErrorCode::EventTooLarge);
}
