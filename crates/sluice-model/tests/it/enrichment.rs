//! messageId, context.ip and the shape of the stored body.

use serde_json::json;
use sluice_model::{Endpoint, ErrorCode, EventType, Limits, RequestContext, parse_request};

use crate::support::{RECEIVED_AT, at, batch, field, keys, one, rejected, single};

fn identify(extra: &str) -> String {
    format!(r#"{{"userId":"u"{extra}}}"#)
}

#[test]
fn message_id_of_100_characters_is_kept() {
    let id = "é".repeat(100);
    let event = one(single(
        EventType::Identify,
        &identify(&format!(r#","messageId":"{id}""#)),
    ));
    assert_eq!(event.message_id, id);
    assert_eq!(field(&event, "messageId"), id.as_str());
}

#[test]
fn message_id_of_101_characters_is_rejected() {
    let id = "m".repeat(101);
    let body = format!(r#"{{"batch":[{{"type":"identify","userId":"u","messageId":"{id}"}}]}}"#);
    let error = rejected(batch(&body));
    assert_eq!(error.code, ErrorCode::InvalidField);
    assert_eq!(
        error.message,
        "batch[0]: 'messageId' must be a string of 1 to 100 printable characters \
         (no control characters, no space at either end)"
    );
}

#[test]
fn message_id_with_control_characters_is_rejected() {
    for bad in [
        r"a\nb",
        r"a\rb",
        r"a\u0000b",
        r"a\u001fb",
        r"a\u007fb",
        r"a\tb",
        r"\u0085",
        " lead",
        "trail ",
        " ",
    ] {
        let body = identify(&format!(r#","messageId":"{bad}""#));
        let error = rejected(single(EventType::Identify, &body));
        assert_eq!(error.code, ErrorCode::InvalidField, "{bad}");
        assert!(
            error.message.contains("'messageId'"),
            "{bad}: {}",
            error.message
        );
    }
    let fine = identify(r#","messageId":"ajs-näive id/ünicode 42""#);
    assert_eq!(
        one(single(EventType::Identify, &fine)).message_id,
        "ajs-näive id/ünicode 42"
    );
}

#[test]
fn empty_or_non_string_message_id_is_rejected() {
    for value in [r#""""#, "12", "{}"] {
        let body = identify(&format!(r#","messageId":{value}"#));
        assert_eq!(
            rejected(single(EventType::Identify, &body)).code,
            ErrorCode::InvalidField,
            "{value}"
        );
    }
}

#[test]
fn missing_message_id_is_generated_as_uuid_v4() {
    let event = one(single(EventType::Identify, &identify("")));
    let parsed = uuid::Uuid::parse_str(&event.message_id).expect("a UUID");
    assert_eq!(parsed.get_version_num(), 4);
    assert_eq!(field(&event, "messageId"), event.message_id.as_str());
    let again = one(single(EventType::Identify, &identify("")));
    assert_ne!(again.message_id, event.message_id);
}

#[test]
fn context_is_created_with_the_client_ip() {
    let event = one(single(EventType::Identify, &identify("")));
    assert_eq!(field(&event, "context"), json!({"ip":"203.0.113.7"}));
}

#[test]
fn client_set_ip_is_kept() {
    let event = one(single(
        EventType::Identify,
        &identify(r#","context":{"ip":"10.0.0.1"}"#),
    ));
    assert_eq!(field(&event, "context"), json!({"ip":"10.0.0.1"}));
}

#[test]
fn null_context_becomes_an_object() {
    let event = one(single(EventType::Identify, &identify(r#","context":null"#)));
    assert_eq!(field(&event, "context"), json!({"ip":"203.0.113.7"}));
}

#[test]
fn without_client_ip_context_is_still_created() {
    let ctx = RequestContext {
        received_at: at(RECEIVED_AT),
        client_ip: None,
    };
    let body = identify("");
    let envelope = parse_request(
        Endpoint::Single(EventType::Identify),
        body.as_bytes(),
        &ctx,
        &Limits::default(),
    )
    .expect("accepted");
    assert_eq!(envelope.events[0].body().get("context"), Some(&json!({})));
}

#[test]
fn ipv6_client_address_is_rendered_in_text_form() {
    let ctx = RequestContext {
        received_at: at(RECEIVED_AT),
        client_ip: Some("2001:db8::1".parse().expect("valid address")),
    };
    let body = identify("");
    let envelope = parse_request(
        Endpoint::Single(EventType::Identify),
        body.as_bytes(),
        &ctx,
        &Limits::default(),
    )
    .expect("accepted");
    assert_eq!(envelope.events[0].body()["context"]["ip"], "2001:db8::1");
}

#[test]
fn client_keys_and_values_are_preserved() {
    let event = one(single(
        EventType::Identify,
        r#"{"traits":{"b":1,"a":[true,null,1.5]},"userId":"u","custom":"x"}"#,
    ));
    assert_eq!(&keys(&event)[..3], ["traits", "userId", "custom"]);
    assert_eq!(field(&event, "traits"), json!({"b":1,"a":[true,null,1.5]}));
    assert_eq!(field(&event, "custom"), "x");
}

#[test]
fn every_type_is_accepted_on_its_path() {
    let body = r#"{"userId":"u","event":"E","groupId":"g","previousId":"p"}"#;
    for event_type in EventType::ALL {
        let event = one(single(event_type, body));
        assert_eq!(event.event_type, event_type);
        assert_eq!(field(&event, "type"), event_type.as_str());
    }
}

#[test]
fn arbitrary_bytes_never_panic() {
    let samples: [&[u8]; 6] = [
        b"\\ud800",
        b"{\"batch\":[{\"type\":\"track\"",
        b"{\"batch\":[1,\"a\",null,{}]}",
        &[0xff, 0xfe, 0x00],
        b"{\"a\":\"\\ud800\\",
        b"{\"batch\":[{\"type\":\"alias\",\"userId\":[],\"previousId\":{}}]}",
    ];
    for endpoint in [Endpoint::Batch, Endpoint::Single(EventType::Alias)] {
        for sample in samples {
            let result =
                parse_request(endpoint, sample, &crate::support::ctx(), &Limits::default());
            assert!(result.is_err(), "{sample:?} should be rejected");
        }
    }
}
