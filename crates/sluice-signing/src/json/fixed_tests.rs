//! `is_fixed_point` must never accept text the round trip changes; it
//! should accept what clients commonly send.

use proptest::prelude::*;
use serde_json::Value;

use super::{is_fixed_point, to_js_json};

/// The round trip as a JavaScript receiver would do it.
fn round_trip(text: &str) -> Option<String> {
    serde_json::from_str::<Value>(text)
        .ok()
        .map(|v| to_js_json(&v))
}

#[test]
fn accepts_what_javascript_clients_send() {
    for text in [
        r#"{"type":"track","event":"Order Completed","properties":{"revenue":129.95,"currency":"USD","products":[{"sku":"sku-1","price":12.5,"quantity":1}]}}"#,
        r#"{"library":{"name":"analytics-node","version":"6.2.0"},"ip":"203.0.113.42","locale":"en-US","traits":{}}"#,
        r#""2026-11-24T19:37:03.985Z""#,
        r#"[0,-1,0.5,-0.25,0.000001,123456789012345,1e0]"#.trim_end_matches(",1e0]"),
        r#"{"line":"one\ntwo\t\"three\"\\","emoji":"héllo ✓","a":null,"b":true,"c":false}"#,
        "[]",
        "{}",
    ] {
        let text = if text.ends_with(']') || text.ends_with('}') || text.ends_with('"') {
            text.to_owned()
        } else {
            format!("{text}]")
        };
        assert!(is_fixed_point(&text), "{text}");
        assert_eq!(round_trip(&text).as_deref(), Some(text.as_str()));
    }
}

#[test]
fn refuses_text_the_round_trip_changes() {
    for text in [
        r#"{"a": 1}"#,
        "[1.0]",
        "[1.50]",
        "[-0]",
        "[1e2]",
        "[0.0000001]",
        "[1234567890123456789]",
        r#"["\u0041"]"#,
        r#"["a\/b"]"#,
        r#"{"a":1,"a":2}"#,
        r#"{"b":1,"7":2}"#,
        "[1,2,]",
        "nul",
        "",
    ] {
        assert!(!is_fixed_point(text), "{text}");
    }
}

#[test]
fn refuses_some_fixed_points_it_cannot_prove_cheaply() {
    // Canonical, but outside what the scan accepts: the full path renders
    // them, so this costs time, never correctness.
    for text in ["[0.30000000000000004]", r#"["\u001f"]"#, "[1e+21]"] {
        assert_eq!(round_trip(text).as_deref(), Some(text));
        assert!(!is_fixed_point(text), "{text}");
    }
}

#[test]
fn refuses_nesting_deeper_than_its_limit() {
    let deep = format!("{}{}", "[".repeat(65), "]".repeat(65));
    assert!(!is_fixed_point(&deep));
    let fine = format!("{}{}", "[".repeat(64), "]".repeat(64));
    assert!(is_fixed_point(&fine));
}

fn space() -> impl Strategy<Value = &'static str> {
    prop_oneof![8 => Just(""), 1 => Just(" "), 1 => Just("\n")]
}

fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| f.to_string()),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| format!("{f:e}")),
        "-?(0|[1-9][0-9]{0,17})(\\.[0-9]{1,18})?([eE][+-]?[0-9]{1,2})?",
        "-?0\\.0{0,8}[1-9]{1,3}",
    ]
}

fn string() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>().prop_map(|s| serde_json::to_string(&s).unwrap_or_default()),
        r#""([a-z0-9 é✓]|\\[nrtbf"\\/]|\\u00[0-9a-fA-F]{2}|\\u[dD][89abAB][0-9a-f]{2}\\u[dD][c-fC-F][0-9a-f]{2}){0,6}""#,
    ]
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => string(),
        1 => "\"(0|7|01|42|4294967294|4294967295|-1|a)\"",
    ]
}

fn text() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("null".to_owned()),
        Just("true".to_owned()),
        Just("false".to_owned()),
        number(),
        string(),
    ];
    leaf.prop_recursive(4, 40, 6, |inner| {
        prop_oneof![
            prop::collection::vec((space(), inner.clone()), 0..6).prop_map(|items| {
                let items: Vec<String> =
                    items.into_iter().map(|(s, v)| format!("{s}{v}")).collect();
                format!("[{}]", items.join(","))
            }),
            prop::collection::vec((key(), space(), inner), 0..6).prop_map(|members| {
                let members: Vec<String> = members
                    .into_iter()
                    .map(|(k, s, v)| format!("{k}:{s}{v}"))
                    .collect();
                format!("{{{}}}", members.join(","))
            }),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn accepted_text_is_what_the_round_trip_returns(text in text()) {
        if is_fixed_point(&text) {
            prop_assert_eq!(round_trip(&text), Some(text.clone()));
        }
    }

    #[test]
    fn the_rendering_of_plain_values_is_accepted(n in -999_999_999_999_999i64..999_999_999_999_999, cents in 0u32..100, s in "[a-zA-Z0-9 _.:-]{0,20}") {
        let price: f64 = format!("{}.{cents:02}", n % 1000).parse().unwrap_or_default();
        let value = serde_json::json!({"n": n, "price": price, "s": s, "list": [n, s]});
        let text = to_js_json(&value);
        prop_assert!(is_fixed_point(&text), "{}", text);
    }
}
