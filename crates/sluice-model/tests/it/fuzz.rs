//! Property tests over the collection API's parser, bounded in cases so they
//! run in `scripts/test` on stable Rust: no input makes it panic, and every
//! call it accepts is stored as a JSON object carrying what delivery needs.

use proptest::prelude::*;
use serde_json::{Map, Value};
use sluice_model::{Endpoint, EventType, Limits, parse_request};

use crate::support::ctx;

const KEYS: [&str; 16] = [
    "type",
    "userId",
    "anonymousId",
    "event",
    "name",
    "groupId",
    "previousId",
    "messageId",
    "timestamp",
    "sentAt",
    "originalTimestamp",
    "context",
    "integrations",
    "properties",
    "traits",
    "writeKey",
];

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::sample::select(&KEYS[..]).prop_map(str::to_owned),
        1 => any::<String>(),
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("JSON numbers are finite", |f| f.is_finite())
            .prop_map(Value::from),
        any::<String>().prop_map(Value::from),
        proptest::sample::select(
            &[
                "2024-05-06T19:11:01.266Z",
                "2024-05-06T19:11:01+02:00",
                "1999-12-31",
                "not a date",
                "",
                "track",
                "identify",
                "page",
            ][..]
        )
        .prop_map(Value::from),
    ]
}

/// Any JSON value, a few levels deep.
pub fn json() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(3, 32, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(key(), inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A call: often close to valid (identity, event name), with anything else
/// mixed in.
pub fn call() -> impl Strategy<Value = Map<String, Value>> {
    (
        prop::collection::btree_map(key(), json(), 0..8),
        prop::option::of(any::<String>()),
        prop::option::of("[a-z]{1,8}"),
        prop::option::of("[ -~]{1,40}"),
    )
        .prop_map(|(fields, user, event, message_id)| {
            let mut m: Map<String, Value> = fields.into_iter().collect();
            if let Some(u) = user {
                m.insert("userId".into(), Value::from(u));
            }
            if let Some(e) = event {
                m.insert("event".into(), Value::from(e.clone()));
                m.insert("name".into(), Value::from(e.clone()));
                m.insert("groupId".into(), Value::from(e.clone()));
                m.insert("previousId".into(), Value::from(e));
            }
            if let Some(id) = message_id {
                m.insert("messageId".into(), Value::from(id));
            }
            m
        })
}

fn endpoint() -> impl Strategy<Value = Endpoint> {
    prop_oneof![
        proptest::sample::select(&EventType::ALL[..]).prop_map(Endpoint::Single),
        Just(Endpoint::Batch),
    ]
}

/// The request body for `calls` on `endpoint`.
pub fn body(endpoint: Endpoint, calls: &[Map<String, Value>]) -> Vec<u8> {
    match endpoint {
        Endpoint::Single(_) => Value::Object(calls.first().cloned().unwrap_or_default()),
        Endpoint::Batch => {
            let batch = calls.iter().cloned().map(Value::Object).collect();
            let mut outer = Map::new();
            outer.insert("batch".into(), Value::Array(batch));
            Value::Object(outer)
        }
    }
    .to_string()
    .into_bytes()
}

/// What every accepted call must be for delivery to use it.
fn assert_storable(event: &sluice_model::Event) -> Result<(), TestCaseError> {
    let stored: Value = serde_json::from_str(&event.json)
        .map_err(|e| TestCaseError::fail(format!("stored body is not JSON: {e}")))?;
    let obj = stored
        .as_object()
        .ok_or_else(|| TestCaseError::fail("stored body is not an object"))?;
    prop_assert_eq!(
        obj.get("type").and_then(Value::as_str),
        Some(event.event_type.as_str())
    );
    prop_assert_eq!(
        obj.get("messageId").and_then(Value::as_str),
        Some(event.message_id.as_str())
    );
    prop_assert!(!event.message_id.is_empty());
    prop_assert!(obj.get("receivedAt").is_some_and(Value::is_string));
    prop_assert!(
        !obj.contains_key("writeKey"),
        "the write key is never stored"
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(endpoint in endpoint(), bytes in prop::collection::vec(any::<u8>(), 0..600)) {
        let _ = parse_request(endpoint, &bytes, &ctx(), &Limits::default());
    }

    #[test]
    fn accepted_calls_are_stored_as_deliverable_json(
        endpoint in endpoint(),
        calls in prop::collection::vec(call(), 1..4),
    ) {
        let bytes = body(endpoint, &calls);
        if let Ok(envelope) = parse_request(endpoint, &bytes, &ctx(), &Limits::default()) {
            prop_assert!(!envelope.events.is_empty());
            for event in &envelope.events {
                assert_storable(event)?;
            }
        }
    }

    #[test]
    fn lone_surrogate_escapes_never_panic(
        prefix in "[a-z]{0,4}",
        escapes in prop::collection::vec(
            proptest::sample::select(&["\\ud83d", "\\ude00", "\\ud83d\\ude00", "\\u0000", "\\\\", "\\\""][..]),
            1..4,
        ),
    ) {
        let text = format!("{prefix}{}", escapes.concat());
        let body = format!(r#"{{"userId":"{text}","event":"{text}","properties":{{"{text}":"{text}"}}}}"#);
        let single = parse_request(Endpoint::Single(EventType::Track), body.as_bytes(), &ctx(), &Limits::default());
        if let Ok(envelope) = single {
            for event in &envelope.events {
                assert_storable(event)?;
            }
        }
    }
}
