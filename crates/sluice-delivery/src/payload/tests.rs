use super::*;
use serde_json::json;

fn keys(v: &Value) -> Vec<&str> {
    v.as_object()
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

fn built(v: Value) -> Value {
    build(&v.to_string()).expect("valid stored event")
}

const TIMES: [(&str, &str); 4] = [
    ("timestamp", "2024-05-01T12:00:00.250Z"),
    ("originalTimestamp", "2024-05-01T12:00:00.100Z"),
    ("sentAt", "2024-05-01T12:00:00.120Z"),
    ("receivedAt", "2024-05-01T12:00:00.270Z"),
];

fn stored(kind: &str, extra: Value) -> Value {
    let mut v = json!({
        "receivedAt": TIMES[3].1, "sentAt": TIMES[2].1,
        "originalTimestamp": TIMES[1].1, "timestamp": TIMES[0].1,
        "context": {"ip": "203.0.113.9"}, "integrations": {"Webhooks": true},
        "messageId": "m-1", "anonymousId": "anon-1", "userId": "u-1", "type": kind,
    });
    if let (Some(map), Value::Object(more)) = (v.as_object_mut(), extra) {
        map.extend(more);
    }
    v
}

#[test]
fn track_has_fixed_key_order_and_event_properties() {
    let m = built(stored(
        "track",
        json!({"event": "Signed Up", "properties": {"plan": "pro"}}),
    ));
    assert_eq!(
        keys(&m),
        [
            "version",
            "type",
            "messageId",
            "userId",
            "anonymousId",
            "event",
            "properties",
            "context",
            "integrations",
            "timestamp",
            "originalTimestamp",
            "sentAt",
            "receivedAt"
        ]
    );
    assert_eq!(m["version"], 1);
    assert_eq!(m["event"], "Signed Up");
    assert_eq!(m["properties"]["plan"], "pro");
    for (k, t) in TIMES {
        assert_eq!(m[k], t);
    }
}

#[test]
fn alias_uses_spaced_identity_keys_and_no_user_id() {
    let m = built(stored("alias", json!({"previousId": "old-1"})));
    assert_eq!(m["Previous ID"], "old-1");
    assert_eq!(m["User ID"], "u-1");
    assert!(m.get("userId").is_none());
    assert!(m.get("previousId").is_none());
    assert_eq!(m["version"], 1);
}

#[test]
fn page_properties_lead_with_documented_keys_and_fall_back_to_context_page() {
    let mut ev = stored(
        "page",
        json!({"name": "Pricing", "category": "Docs",
               "properties": {"plan": "pro", "url": "https://e.x/p", "title": "P"}}),
    );
    ev["context"]["page"] = json!({"path": "/p", "referrer": "https://r.x/"});
    let m = built(ev);
    assert_eq!(
        keys(&m["properties"]),
        ["path", "referrer", "title", "url", "plan"]
    );
    assert_eq!(m["properties"]["path"], "/p");
    assert_eq!(m["properties"]["url"], "https://e.x/p");
    assert_eq!(m["name"], "Pricing");
    assert_eq!(m["category"], "Docs");
}

#[test]
fn screen_keeps_name_and_device_context() {
    let mut ev = stored("screen", json!({"name": "Home"}));
    ev["context"]["device"] = json!({"model": "iPhone15,2", "type": "ios"});
    let m = built(ev);
    assert_eq!(m["name"], "Home");
    assert_eq!(m["context"]["device"]["model"], "iPhone15,2");
}

#[test]
fn identify_and_group_always_carry_traits() {
    let m = built(stored("identify", json!({})));
    assert_eq!(m["traits"], json!({}));
    let g = built(stored(
        "group",
        json!({"groupId": "g-1", "traits": {"n": 2}}),
    ));
    assert_eq!(g["groupId"], "g-1");
    assert_eq!(g["traits"]["n"], 2);
}

#[test]
fn missing_user_id_is_null_and_unknown_keys_are_carried_but_write_key_is_not() {
    let mut ev = stored(
        "track",
        json!({"event": "E", "channel": "server", "writeKey": "sk"}),
    );
    if let Some(map) = ev.as_object_mut() {
        map.remove("userId");
    }
    let m = built(ev);
    assert_eq!(m["userId"], Value::Null);
    assert_eq!(m["channel"], "server");
    assert!(m.get("writeKey").is_none());
}

#[test]
fn delete_has_only_type_user_and_timestamp() {
    let m = built(stored("delete", json!({})));
    assert_eq!(keys(&m), ["type", "userId", "timestamp"]);
    assert_eq!(m, delete_message("u-1", TIMES[0].1));
}

#[test]
fn unknown_type_and_non_objects_are_rejected() {
    assert!(build(r#"{"type":"bogus"}"#).is_err());
    assert!(build("[1]").is_err());
    assert!(build("not json").is_err());
}

#[test]
fn render_matches_js_stringify_of_its_own_parse() {
    let m = built(stored(
        "track",
        json!({"event": "E", "properties": {"n": 1.0, "big": 1e21}}),
    ));
    let body = render(&m);
    let text = String::from_utf8(body.clone()).expect("utf-8");
    assert!(text.contains(r#""n":1,"#), "{text}");
    assert!(text.contains(r#""big":1e+21"#), "{text}");
    let reparsed: Value = serde_json::from_slice(&body).expect("json");
    assert_eq!(render(&reparsed), body);
}

/// The full path: parse into a tree, build, render.
fn full(body: &str) -> Result<Vec<u8>, String> {
    build(body).map(|m| render(&m)).map_err(|e| e.to_string())
}

#[test]
fn raw_path_renders_the_common_events_byte_for_byte_as_the_full_path() {
    for (kind, extra) in [
        (
            "track",
            json!({"event": "E", "properties": {"revenue": 129.95, "items": [{"sku": "a", "q": 1}]}}),
        ),
        (
            "identify",
            json!({"traits": {"email": "a@example.com", "age": 41}}),
        ),
        ("group", json!({"groupId": "g-1", "traits": {"n": 2}})),
        (
            "screen",
            json!({"name": "Home", "category": "Main", "properties": {"x": true}}),
        ),
        ("alias", json!({"previousId": "old"})),
    ] {
        let body = stored(kind, extra).to_string();
        let fast = raw::render(&body).expect("the raw path covers this event");
        assert_eq!(Ok(fast), full(&body), "{kind}");
    }
}

#[test]
fn raw_path_leaves_page_delete_and_reordered_keys_to_the_full_path() {
    for body in [
        stored("page", json!({"name": "Home"})).to_string(),
        stored("delete", json!({})).to_string(),
        stored("track", json!({"0": "first in JavaScript"})).to_string(),
        stored("alias", json!({"User ID": "x"})).to_string(),
        r#"{"type":7}"#.to_owned(),
        "[1]".to_owned(),
    ] {
        assert!(raw::render(&body).is_none(), "{body}");
        assert_eq!(render_event(&body).map_err(|e| e.to_string()), full(&body));
    }
}

mod raw_equivalence {
    use proptest::prelude::*;

    use super::full;
    use crate::payload::{KNOWN, render_event};

    /// Keys besides the builder's own: forwarded, never forwarded, ones
    /// JavaScript reorders or the builder writes, and escaped spellings.
    const MORE_KEYS: &[&str] = &[
        "writeKey",
        "channel",
        "0",
        "7",
        "User ID",
        "Previous ID",
        "user\\u0049d",
        "a\\\"b",
    ];

    /// Value texts in and out of `JSON.stringify` form.
    const VALUES: &[&str] = &[
        "null",
        "true",
        "\"x\"",
        "\"caf\\u00e9\"",
        "\"line\\nbreak\"",
        "1.0",
        "1e2",
        "129.95",
        "-0",
        "12345678901234567890",
        "{}",
        "[]",
        "{\"a\":1}",
        "{ \"a\" : [1, 2.50] }",
        "{\"1\":2,\"b\":3}",
        "{\"k\":1,\"k\":2}",
        "\"2024-05-01T12:00:00.250Z\"",
        "[{\"sku\":\"a\",\"price\":9.99}]",
    ];

    const TYPES: &[&str] = &[
        "\"track\"",
        "\"identify\"",
        "\"group\"",
        "\"screen\"",
        "\"alias\"",
        "\"page\"",
        "\"delete\"",
        "\"bogus\"",
        "\"tr\\u0061ck\"",
        "5",
    ];

    fn body() -> impl Strategy<Value = String> {
        (
            proptest::sample::select(TYPES),
            prop::collection::vec(
                (
                    proptest::sample::select(
                        KNOWN.iter().chain(MORE_KEYS).copied().collect::<Vec<_>>(),
                    ),
                    proptest::sample::select(VALUES),
                    prop_oneof![4 => Just(""), 1 => Just(" ")],
                ),
                0..12,
            ),
            0usize..12,
        )
            .prop_map(|(kind, members, at)| {
                let mut parts: Vec<String> = members
                    .into_iter()
                    .map(|(k, v, s)| format!("\"{k}\":{s}{v}"))
                    .collect();
                parts.insert(at.min(parts.len()), format!("\"type\":{kind}"));
                format!("{{{}}}", parts.join(","))
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        #[test]
        fn both_paths_send_the_same_bytes(body in body()) {
            let fast = render_event(&body).map_err(|e| e.to_string());
            prop_assert_eq!(fast, full(&body), "{}", body);
        }
    }
}

#[test]
fn unknown_keys_and_page_properties_keep_their_stored_order() {
    let body = r#"{"type":"track","b":1,"userId":"u","a":2,"event":"E","c":3}"#;
    let m = build(body).expect("valid");
    assert_eq!(
        keys(&m),
        [
            "version",
            "type",
            "userId",
            "event",
            "properties",
            "b",
            "a",
            "c",
            "context"
        ]
    );
    let page = r#"{"type":"page","properties":{"z":1,"title":"T","y":2,"path":"/"}}"#;
    let m = build(page).expect("valid");
    assert_eq!(keys(&m["properties"]), ["path", "title", "z", "y"]);
}
