//! Accepted ⇒ deliverable: every event the collection parser accepts turns
//! into a webhook request the sender can send (a body, and headers that are
//! valid HTTP), whatever strings a client put in it.

use bytes::Bytes;
use chrono::Utc;
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use sluice_delivery::payload;
use sluice_delivery::sender::{Job, build_headers};
use sluice_model::{Endpoint, Limits, RequestContext, parse_request};
use sluice_store::WebhookUrl;

/// Any string, control characters and non-ASCII included.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "\\PC{0,12}",
        any::<String>().prop_map(|s| s.chars().take(40).collect()),
        Just(String::new()),
        "[a-z0-9-]{1,8}[\\n\\r\\x00\\x1f\\x7f\\t][a-z]{0,4}",
    ]
}

fn call() -> impl Strategy<Value = Value> {
    let kind = prop_oneof![
        Just("track"),
        Just("page"),
        Just("screen"),
        Just("identify"),
        Just("group"),
        Just("alias"),
    ];
    (
        kind,
        proptest::option::of(text()),
        text(),
        text(),
        proptest::collection::vec((text(), text()), 0..4),
        proptest::collection::vec((text(), text()), 0..3),
    )
        .prop_map(|(kind, message_id, user, name, props, page)| {
            let props: Map<String, Value> = props
                .into_iter()
                .map(|(k, v)| (k, Value::String(v)))
                .collect();
            let page: Map<String, Value> = page
                .into_iter()
                .map(|(k, v)| (k, Value::String(v)))
                .collect();
            let mut call = json!({
                "type": kind, "userId": user, "anonymousId": "anon",
                "event": name, "name": name, "groupId": name, "previousId": user,
                "properties": props, "traits": props,
                "context": {"page": page},
            });
            if let Some(id) = message_id {
                call["messageId"] = Value::String(id);
            }
            call
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_accepted_event_yields_a_sendable_request(
        calls in proptest::collection::vec(call(), 1..4)
    ) {
        let body = json!({"batch": calls}).to_string();
        let ctx = RequestContext { received_at: Utc::now(), client_ip: None };
        let Ok(envelope) = parse_request(Endpoint::Batch, body.as_bytes(), &ctx, &Limits::default())
        else {
            // Refused at ingest with a 400: nothing was accepted.
            return Ok(());
        };
        let target = WebhookUrl {
            url: "https://hooks.example.com/x".into(),
            headers: vec![("X-Team".into(), "blue".into())],
        };
        for event in envelope.events {
            let message = payload::build(&event.json)
                .map_err(|e| TestCaseError::fail(format!("payload: {e}")))?;
            let bytes = payload::render(&message);
            prop_assert!(serde_json::from_slice::<Value>(&bytes).is_ok());
            let job = Job {
                delivery_id: 1,
                attempt: 1,
                message_id: event.message_id.clone(),
                body: Bytes::from(bytes),
                signature: Some("0123abcd".into()),
                standard: None,
                destination: None,
            };
            let headers = build_headers(&target, &job);
            prop_assert!(
                headers.is_ok(),
                "accepted messageId {:?} cannot be sent: {:?}",
                event.message_id,
                headers.err()
            );
        }
    }
}
