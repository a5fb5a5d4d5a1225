//! receivedAt, originalTimestamp, sentAt and the clock-skew correction.

use sluice_model::{ErrorCode, EventType};

use crate::support::{RECEIVED_AT, at, batch, field, keys, one, rejected, single};

fn track(extra: &str) -> String {
    format!(r#"{{"userId":"u","event":"E"{extra}}}"#)
}

#[test]
fn skew_is_corrected_with_the_wire_example() {
    let event = one(single(
        EventType::Track,
        &track(r#","timestamp":"2024-05-06T19:11:01.152Z","sentAt":"2024-05-06T19:11:01.169Z""#),
    ));
    assert_eq!(field(&event, "timestamp"), "2024-05-06T19:11:01.249Z");
    assert_eq!(
        field(&event, "originalTimestamp"),
        "2024-05-06T19:11:01.152Z"
    );
    assert_eq!(field(&event, "sentAt"), "2024-05-06T19:11:01.169Z");
    assert_eq!(field(&event, "receivedAt"), RECEIVED_AT);
    assert_eq!(event.timestamp, at("2024-05-06T19:11:01.249Z"));
    assert_eq!(event.received_at, at(RECEIVED_AT));
}

#[test]
fn skew_correction_handles_a_client_clock_hours_behind() {
    let event = one(single(
        EventType::Track,
        &track(
            r#","timestamp":"2024-05-06T16:11:01.000-00:00","sentAt":"2024-05-06T16:11:03.000Z""#,
        ),
    ));
    assert_eq!(field(&event, "timestamp"), "2024-05-06T19:10:59.266Z");
}

#[test]
fn batch_sent_at_applies_to_items_without_their_own() {
    let body = r#"{"sentAt":"2024-05-06T19:11:01.169Z","batch":[
        {"type":"identify","userId":"u","timestamp":"2024-05-06T19:11:01.152Z"},
        {"type":"identify","userId":"u","timestamp":"2024-05-06T19:11:01.152Z","sentAt":"2024-05-06T19:11:01.252Z"}]}"#;
    let events = batch(body).expect("accepted").events;
    assert_eq!(field(&events[0], "timestamp"), "2024-05-06T19:11:01.249Z");
    assert_eq!(field(&events[0], "sentAt"), "2024-05-06T19:11:01.169Z");
    assert_eq!(field(&events[1], "timestamp"), "2024-05-06T19:11:01.166Z");
    assert_eq!(field(&events[1], "sentAt"), "2024-05-06T19:11:01.252Z");
}

#[test]
fn without_sent_at_the_client_timestamp_is_kept_exactly() {
    let event = one(single(
        EventType::Track,
        &track(r#","timestamp":"2015-01-01T00:00:00.123456789+02:00""#),
    ));
    assert_eq!(field(&event, "timestamp"), "2014-12-31T22:00:00.123Z");
    assert_eq!(
        field(&event, "originalTimestamp"),
        "2014-12-31T22:00:00.123Z"
    );
    assert!(!event.body().contains_key("sentAt"));
}

#[test]
fn historical_import_with_sent_at_now_stays_near_the_past_time() {
    let event = one(single(
        EventType::Track,
        &track(r#","timestamp":"2015-01-01T00:00:00Z","sentAt":"2024-05-06T19:11:01.200Z""#),
    ));
    assert_eq!(field(&event, "timestamp"), "2015-01-01T00:00:00.066Z");
}

#[test]
fn without_client_timestamp_timestamp_is_received_at() {
    let event = one(single(
        EventType::Track,
        &track(r#","sentAt":"2024-05-06T19:11:00.000Z""#),
    ));
    assert_eq!(field(&event, "timestamp"), RECEIVED_AT);
    assert_eq!(field(&event, "sentAt"), "2024-05-06T19:11:00.000Z");
    assert!(!event.body().contains_key("originalTimestamp"));
}

#[test]
fn analytics_go_v2_timestamp_format_is_accepted() {
    let event = one(single(
        EventType::Track,
        &track(r#","timestamp":"2009-11-10T23:00:00+0000""#),
    ));
    assert_eq!(field(&event, "timestamp"), "2009-11-10T23:00:00.000Z");
}

/// analytics-node passes a caller's string through unchanged, and Segment's
/// parser takes a date alone and a time without seconds: refusing either
/// would drop the whole batch.
#[test]
fn date_alone_and_time_without_seconds_are_accepted() {
    for (key, sent, want) in [
        ("timestamp", "2024-05-06", "2024-05-06T00:00:00.000Z"),
        ("timestamp", "2024-05-06T19:11Z", "2024-05-06T19:11:00.000Z"),
        (
            "originalTimestamp",
            "2024-05-06 19:11",
            "2024-05-06T19:11:00.000Z",
        ),
        (
            "timestamp",
            "2024-05-06T19:11+02:00",
            "2024-05-06T17:11:00.000Z",
        ),
        (
            "timestamp",
            "2024-05-06t19:11-0500",
            "2024-05-07T00:11:00.000Z",
        ),
    ] {
        let event = one(single(
            EventType::Track,
            &track(&format!(r#","{key}":"{sent}""#)),
        ));
        assert_eq!(field(&event, "timestamp"), want, "{sent}");
        assert_eq!(field(&event, "originalTimestamp"), want, "{sent}");
    }
    let body = r#"{"sentAt":"2024-05-06T19:11Z","batch":[
        {"type":"identify","userId":"u","timestamp":"2024-05-06"}]}"#;
    let events = batch(body).expect("accepted").events;
    assert_eq!(field(&events[0], "sentAt"), "2024-05-06T19:11:00.000Z");
    assert_eq!(
        field(&events[0], "originalTimestamp"),
        "2024-05-06T00:00:00.000Z"
    );
}

#[test]
fn hours_alone_and_a_fraction_without_seconds_are_rejected() {
    for value in ["2024-05-06T19", "2024-05-06T19:11.5Z", "2024-05-06Z"] {
        let body =
            format!(r#"{{"batch":[{{"type":"identify","userId":"u","timestamp":"{value}"}}]}}"#);
        let error = rejected(batch(&body));
        assert_eq!(error.code, ErrorCode::InvalidField, "{value}");
        assert_eq!(
            error.message,
            "batch[0]: 'timestamp' is not an ISO 8601 date-time"
        );
    }
}

#[test]
fn zero_and_nine_fractional_digits_are_accepted() {
    for (sent, want) in [
        ("2024-05-06T19:11:01Z", "2024-05-06T19:11:01.000Z"),
        ("2024-05-06T19:11:01.987654321Z", "2024-05-06T19:11:01.987Z"),
    ] {
        let event = one(single(
            EventType::Track,
            &track(&format!(r#","timestamp":"{sent}""#)),
        ));
        assert_eq!(field(&event, "timestamp"), want);
    }
}

#[test]
fn client_original_timestamp_alone_is_skew_corrected() {
    let event = one(single(
        EventType::Track,
        &track(
            r#","originalTimestamp":"2024-05-06T19:11:01.152Z","sentAt":"2024-05-06T19:11:01.169Z""#,
        ),
    ));
    assert_eq!(field(&event, "timestamp"), "2024-05-06T19:11:01.249Z");
    assert_eq!(
        field(&event, "originalTimestamp"),
        "2024-05-06T19:11:01.152Z"
    );
}

#[test]
fn absurd_skew_falls_back_to_the_client_timestamp() {
    let event = one(single(
        EventType::Track,
        &track(r#","timestamp":"0001-01-01T00:00:00Z","sentAt":"9999-01-01T00:00:00Z""#),
    ));
    assert_eq!(field(&event, "timestamp"), "0001-01-01T00:00:00.000Z");
}

#[test]
fn unparsable_timestamp_is_rejected_naming_the_field() {
    for key in ["timestamp", "sentAt", "originalTimestamp"] {
        let body = format!(r#"{{"batch":[{{"type":"identify","userId":"u","{key}":"soon"}}]}}"#);
        let error = rejected(batch(&body));
        assert_eq!(error.code, ErrorCode::InvalidField);
        assert_eq!(
            error.message,
            format!("batch[0]: '{key}' is not an ISO 8601 date-time")
        );
    }
}

#[test]
fn timestamp_outside_years_0000_to_9999_in_utc_is_rejected() {
    for (key, value) in [
        ("timestamp", "9999-12-31T23:59:59-01:00"),
        ("originalTimestamp", "0000-01-01T00:00:00+01:00"),
        ("sentAt", "9999-12-31T23:00:00-0100"),
    ] {
        let body = format!(r#"{{"batch":[{{"type":"identify","userId":"u","{key}":"{value}"}}]}}"#);
        let error = rejected(batch(&body));
        assert_eq!(error.code, ErrorCode::InvalidField);
        assert_eq!(
            error.message,
            format!("batch[0]: '{key}' is not an ISO 8601 date-time")
        );
    }
}

#[test]
fn unparsable_batch_sent_at_is_rejected_without_index() {
    let error = rejected(batch(r#"{"sentAt":"later","batch":[]}"#));
    assert_eq!(error.message, "'sentAt' is not an ISO 8601 date-time");
}

#[test]
fn non_string_timestamp_is_rejected() {
    let error = rejected(single(
        EventType::Track,
        &track(r#","timestamp":1700000000"#),
    ));
    assert_eq!(error.code, ErrorCode::InvalidField);
    assert_eq!(
        error.message,
        "'timestamp' must be an ISO 8601 date-time string"
    );
}

#[test]
fn null_timestamp_counts_as_absent() {
    let event = one(single(EventType::Track, &track(r#","timestamp":null"#)));
    assert_eq!(field(&event, "timestamp"), RECEIVED_AT);
}

#[test]
fn server_keys_are_appended_in_order_after_client_keys() {
    let event = one(single(
        EventType::Track,
        r#"{"event":"E","userId":"u","timestamp":"2024-05-06T19:11:01.152Z","sentAt":"2024-05-06T19:11:01.169Z","context":{}}"#,
    ));
    assert_eq!(
        keys(&event),
        [
            "event",
            "userId",
            "timestamp",
            "sentAt",
            "context",
            "type",
            "messageId",
            "receivedAt",
            "originalTimestamp"
        ]
    );
}

/// `testdata/timestamps/vectors.json` is shared with the Go library, which
/// checks caller-set timestamps before queueing them (a timestamp the
/// server refuses would fail its whole batch): the grammar must agree.
#[test]
fn the_shared_timestamp_vectors_hold() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testdata/timestamps/vectors.json"
    );
    let text = std::fs::read_to_string(path).expect("read the vectors");
    let vectors: serde_json::Value = serde_json::from_str(&text).expect("json");
    let list = |key: &str| -> Vec<String> {
        vectors[key]
            .as_array()
            .expect("a list")
            .iter()
            .map(|v| v.as_str().expect("a string").to_owned())
            .collect()
    };
    let (valid, invalid) = (list("valid"), list("invalid"));
    assert!(!valid.is_empty() && !invalid.is_empty());
    for s in &valid {
        assert!(sluice_model::time::parse(s).is_some(), "{s:?} refused");
    }
    for s in &invalid {
        assert!(sluice_model::time::parse(s).is_none(), "{s:?} accepted");
    }
}
