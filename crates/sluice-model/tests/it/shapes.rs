//! Shapes taken during the parse (`parse_request_with_shapes`) are the ones
//! read from the stored body afterwards, and the parse is otherwise the same.

use proptest::prelude::*;
use serde_json::{Map, Value};
use sluice_model::{
    Endpoint, Event, EventType, Extras, JsonType, Limits, Shape, parse_request, parse_request_with,
    parse_request_with_shapes,
};

use crate::fuzz::{body, call};
use crate::support::ctx;

/// A single track call parsed as ingest parses it for the schema and filters.
fn shaped_track(body: &[u8]) -> Event {
    let endpoint = Endpoint::Single(EventType::Track);
    let envelope = parse_request_with_shapes(endpoint, body, &ctx(), &Limits::default());
    envelope.expect("accepted").events.remove(0)
}

#[test]
fn track_shape_lists_event_name_and_property_types() {
    let body = br#"{"type":"track","userId":"u","event":"Order Completed","properties":{"total":9.5,"sku":"a","items":[1],"meta":{"x":1},"gift":false,"coupon":null},"context":{"ip":"1.2.3.4"}}"#;
    let shape = shaped_track(body).shape.expect("shape taken");
    assert_eq!(shape.kind, "track");
    assert_eq!(shape.name.as_deref(), Some("Order Completed"));
    let types: Vec<(&str, JsonType)> = shape.fields.iter().map(|(k, t)| (k.as_str(), *t)).collect();
    assert_eq!(
        types,
        [
            ("total", JsonType::Number),
            ("sku", JsonType::String),
            ("items", JsonType::Array),
            ("meta", JsonType::Object),
            ("gift", JsonType::Boolean),
            ("coupon", JsonType::Null),
        ]
    );
}

#[test]
fn the_parse_takes_outlines_only_when_asked() {
    let body = br#"{"userId":"u","event":"E","properties":{"a":1}}"#;
    let parse = |shapes, outlines| {
        let extras = Extras { shapes, outlines };
        let endpoint = Endpoint::Single(EventType::Track);
        let envelope = parse_request_with(endpoint, body, &ctx(), &Limits::default(), extras);
        let event = envelope.expect("accepted").events.remove(0);
        (event.shape.is_some(), event.outline.is_some())
    };
    assert_eq!(parse(true, false), (true, false));
    assert_eq!(parse(true, true), (true, true));
    assert_eq!(parse(false, false), (false, false));
}

#[test]
fn without_shapes_the_parse_takes_none() {
    let body = br#"{"userId":"u","traits":{"email":"a@b"}}"#;
    let envelope = parse_request(
        Endpoint::Single(EventType::Identify),
        body,
        &ctx(),
        &Limits::default(),
    )
    .expect("accepted");
    assert_eq!(envelope.events[0].shape, None);
}

/// Every top-level member of the stored body is where the event's outline
/// says, and the outline names nothing else.
fn outline_agrees_with_the_parsed_body(event: &Event) -> bool {
    let Some(outline) = &event.outline else {
        return false;
    };
    let parsed: Map<String, Value> = match serde_json::from_str(&event.json) {
        Ok(map) => map,
        Err(_) => return false,
    };
    outline.len() == parsed.len()
        && parsed.iter().all(|(key, value)| {
            outline
                .value(&event.json, key)
                .and_then(|text| serde_json::from_str::<Value>(text).ok())
                .as_ref()
                == Some(value)
        })
        && outline.value(&event.json, "no such key").is_none()
}

#[test]
fn the_outline_finds_each_top_level_value_of_the_stored_text() {
    // A repeated key (last value kept), an escaped key, a nested object.
    let body = br#"{"userId":"u","event":"E","properties":{"a":1},"properties":{"b":[2,"}"]},"we\"ird":"x","context":{"ip":"1.2.3.4","library":{"name":"n"}}}"#;
    let event = &shaped_track(body);
    let outline = event.outline.as_ref().expect("outline taken");
    assert_eq!(
        outline.value(&event.json, "properties"),
        Some(r#"{"b":[2,"}"]}"#)
    );
    assert_eq!(outline.value(&event.json, "we\"ird"), Some(r#""x""#));
    assert_eq!(outline.value(&event.json, "traits"), None);
    assert!(outline_agrees_with_the_parsed_body(event));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn shapes_from_the_parse_match_shapes_read_from_the_stored_body(
        single in proptest::sample::select(&EventType::ALL[..]),
        batch in any::<bool>(),
        calls in prop::collection::vec(call(), 1..4),
    ) {
        let endpoint = if batch { Endpoint::Batch } else { Endpoint::Single(single) };
        let bytes = body(endpoint, &calls);
        let plain = parse_request(endpoint, &bytes, &ctx(), &Limits::default());
        let shaped = parse_request_with_shapes(endpoint, &bytes, &ctx(), &Limits::default());
        prop_assert_eq!(plain.is_ok(), shaped.is_ok());
        if let (Ok(plain), Ok(shaped)) = (plain, shaped) {
            prop_assert_eq!(plain.events.len(), shaped.events.len());
            for (p, s) in plain.events.iter().zip(&shaped.events) {
                // Generated message ids differ between the two parses.
                prop_assert_eq!(p.event_type, s.event_type);
                prop_assert_eq!(p.json.len(), s.json.len());
                let read = Shape::of(&s.json, s.event_type.as_str());
                prop_assert_eq!(s.shape.as_ref(), Some(&read));
                prop_assert_eq!(&p.outline, &None);
                prop_assert!(outline_agrees_with_the_parsed_body(s));
            }
        }
    }
}
