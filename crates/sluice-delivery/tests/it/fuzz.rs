//! Property test: everything the collection API accepts yields a deliverable
//! webhook request. Calls of arbitrary content go through the real parser
//! (`sluice_model::parse_request`), and each accepted event through the real
//! payload builder and renderer: the body must be a JSON object naming the
//! event, the engine's raw path must send the same bytes, and Sluice's own
//! headers must be valid HTTP. Bounded in cases, so
//! it runs in `scripts/test` on stable Rust.
//!
//! `messageId` is drawn from printable text here: ingest accepts only 1 to
//! 100 printable characters (docs/collection-api.md), so nothing else can
//! reach the header.

use std::net::{IpAddr, Ipv4Addr};

use http::HeaderValue;
use proptest::prelude::*;
use serde_json::{Map, Value};
use sluice_delivery::payload;
use sluice_model::{Endpoint, EventType, Limits, RequestContext, parse_request};

fn ctx() -> RequestContext {
    RequestContext {
        received_at: chrono::Utc::now(),
        client_ip: Some(IpAddr::V4(Ipv4Addr::new(203, 0, 113, 7))),
    }
}

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        any::<String>().prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(any::<String>(), inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

const FIELDS: [&str; 10] = [
    "properties",
    "traits",
    "context",
    "integrations",
    "timestamp",
    "sentAt",
    "anonymousId",
    "category",
    "writeKey",
    "version",
];

fn call() -> impl Strategy<Value = Map<String, Value>> {
    (
        any::<String>(),
        "[a-zA-Z0-9 ]{1,12}",
        prop::option::of("[ -~]{1,60}"),
        prop::collection::vec((proptest::sample::select(&FIELDS[..]), json()), 0..6),
        prop::collection::btree_map(any::<String>(), json(), 0..3),
    )
        .prop_map(|(user, name, message_id, fields, extra)| {
            let mut m: Map<String, Value> = extra.into_iter().collect();
            for (k, v) in fields {
                m.insert(k.into(), v);
            }
            m.insert("userId".into(), Value::from(user));
            for k in ["event", "name", "groupId", "previousId"] {
                m.insert(k.into(), Value::from(name.clone()));
            }
            if let Some(id) = message_id {
                m.insert("messageId".into(), Value::from(id));
            }
            m
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn accepted_events_yield_deliverable_requests(
        event_type in proptest::sample::select(&EventType::ALL[..]),
        batch in any::<bool>(),
        calls in prop::collection::vec(call(), 1..4),
    ) {
        let (endpoint, body) = if batch {
            let items = calls.iter().cloned().map(|mut c| {
                c.insert("type".into(), Value::from(event_type.as_str()));
                Value::Object(c)
            });
            (Endpoint::Batch, serde_json::json!({"batch": items.collect::<Vec<_>>()}))
        } else {
            (Endpoint::Single(event_type), Value::Object(calls[0].clone()))
        };
        let bytes = body.to_string().into_bytes();
        let Ok(envelope) = parse_request(endpoint, &bytes, &ctx(), &Limits::default()) else {
            return Ok(());
        };
        for event in &envelope.events {
            let message = payload::build(&event.json)
                .map_err(|e| TestCaseError::fail(format!("accepted but not buildable: {e}")))?;
            let rendered = payload::render(&message);
            // What the engine sends: the same bytes, mostly without a tree.
            let sent = payload::render_event(&event.json)
                .map_err(|e| TestCaseError::fail(format!("accepted but not renderable: {e}")))?;
            prop_assert_eq!(&sent, &rendered);
            let parsed: Value = serde_json::from_slice(&rendered)
                .map_err(|e| TestCaseError::fail(format!("rendered body is not JSON: {e}")))?;
            prop_assert_eq!(parsed["type"].as_str(), Some(event.event_type.as_str()));
            prop_assert_eq!(parsed["messageId"].as_str(), Some(event.message_id.as_str()));
            prop_assert!(parsed.get("writeKey").is_none());
            prop_assert!(HeaderValue::from_str(&event.message_id).is_ok(), "messageId header");
        }
    }
}
