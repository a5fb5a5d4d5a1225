//! One test per serialization rule; the cross-language vectors in
//! `testdata/js-json` are checked by the integration test.

use super::{to_js_json, write_js_json};
use serde_json::{Value, json};

/// Parses like Sluice's ingest does, then renders.
fn render(input: &str) -> String {
    let value: Value = serde_json::from_str(input).unwrap();
    to_js_json(&value)
}

#[test]
fn output_is_compact() {
    assert_eq!(
        render(" { \"a\" : [ 1 , { } , [ ] ] ,\n\t\"b\" : null } "),
        r#"{"a":[1,{},[]],"b":null}"#
    );
}

#[test]
fn literals_render_as_in_javascript() {
    assert_eq!(to_js_json(&json!([true, false, null])), "[true,false,null]");
}

#[test]
fn whole_floats_drop_the_fraction() {
    assert_eq!(render("[1.0, -2.50, 100.000]"), "[1,-2.5,100]");
}

#[test]
fn floats_use_shortest_round_trip_digits() {
    assert_eq!(
        render("[0.1, 0.30000000000000004, 5e-324, 1.7976931348623157e308]"),
        "[0.1,0.30000000000000004,5e-324,1.7976931348623157e+308]"
    );
}

#[test]
fn exponent_switches_at_javascript_thresholds() {
    assert_eq!(
        render("[1e21, 1e20, 1E+2, 1e-6, 1e-7, 123e-20]"),
        "[1e+21,100000000000000000000,100,0.000001,1e-7,1.23e-18]"
    );
}

#[test]
fn negative_zero_prints_as_zero() {
    assert_eq!(render("[-0, -0.0, -0e5]"), "[0,0,0]");
    assert_eq!(to_js_json(&json!(-0.0_f64)), "0");
}

#[test]
fn integers_beyond_two_to_the_53_round_like_f64() {
    assert_eq!(render("9007199254740993"), "9007199254740992");
    assert_eq!(render("18446744073709551615"), "18446744073709552000");
    assert_eq!(render("-9223372036854775808"), "-9223372036854776000");
    assert_eq!(
        render("123456789012345678901234567890"),
        "1.2345678901234568e+29"
    );
}

#[test]
fn non_finite_numbers_render_as_null() {
    // serde_json refuses to build such Numbers by default, but
    // JSON.stringify(Infinity) and JSON.stringify(NaN) are "null".
    for f in [f64::INFINITY, f64::NEG_INFINITY, f64::NAN] {
        let mut out = String::new();
        super::write_f64(f, &mut out);
        assert_eq!(out, "null", "{f}");
    }
}

#[test]
fn quote_and_backslash_are_escaped() {
    assert_eq!(to_js_json(&json!("a\"b\\c")), r#""a\"b\\c""#);
}

#[test]
fn control_characters_use_short_forms_where_javascript_does() {
    assert_eq!(to_js_json(&json!("\u{8}\u{c}\n\r\t")), r#""\b\f\n\r\t""#);
}

#[test]
fn other_control_characters_use_lowercase_unicode_escapes() {
    assert_eq!(
        to_js_json(&json!("\u{0}\u{1}\u{b}\u{1b}\u{1f}")),
        r#""\u0000\u0001\u000b\u001b\u001f""#
    );
}

#[test]
fn slash_del_line_separators_and_non_ascii_are_not_escaped() {
    let s = "a/b\u{7f}\u{2028}\u{2029}é中😀\u{fffd}";
    assert_eq!(to_js_json(&json!(s)), format!("\"{s}\""));
}

#[test]
fn escaped_input_is_rendered_unescaped_where_javascript_would() {
    assert_eq!(render(r#""\u00e9\/\ud83d\ude00\u0041""#), "\"é/😀A\"");
}

#[test]
fn plain_keys_keep_insertion_order() {
    assert_eq!(render(r#"{"b":1,"a":2,"c":3}"#), r#"{"b":1,"a":2,"c":3}"#);
}

#[test]
fn array_index_keys_come_first_in_numeric_order() {
    assert_eq!(
        render(r#"{"b":0,"10":1,"a":2,"2":3,"0":4}"#),
        r#"{"0":4,"2":3,"10":1,"b":0,"a":2}"#
    );
}

#[test]
fn non_canonical_or_out_of_range_integer_keys_stay_in_place() {
    assert_eq!(
        render(r#"{"01":1,"-1":2,"4294967295":3,"4294967294":4,"+1":5,"1.0":6,"1":7}"#),
        r#"{"1":7,"4294967294":4,"01":1,"-1":2,"4294967295":3,"+1":5,"1.0":6}"#
    );
}

#[test]
fn array_index_recognises_exactly_the_canonical_range() {
    use super::keys::array_index;
    assert_eq!(array_index("0"), Some(0));
    assert_eq!(array_index("4294967294"), Some(4_294_967_294));
    for key in [
        "",
        "00",
        "01",
        "-0",
        "-1",
        " 1",
        "1 ",
        "1e3",
        "4294967295",
        "99999999999",
        "٣",
    ] {
        assert_eq!(array_index(key), None, "{key:?}");
    }
}

#[test]
fn duplicate_keys_keep_first_position_and_last_value() {
    assert_eq!(render(r#"{"a":1,"b":2,"a":3}"#), r#"{"a":3,"b":2}"#);
}

#[test]
fn keys_are_escaped_like_values() {
    assert_eq!(render(r#"{"a\"\n\u0001":1}"#), r#"{"a\"\n\u0001":1}"#);
}

#[test]
fn empty_containers_render_empty() {
    assert_eq!(render(r#"[{},[],"",{"":{}}]"#), r#"[{},[],"",{"":{}}]"#);
}

#[test]
fn deep_nesting_beyond_parser_limit_renders() {
    let mut value = json!(0);
    for i in 0..300 {
        value = if i % 2 == 0 {
            json!([value])
        } else {
            json!({ "k": value })
        };
    }
    let out = to_js_json(&value);
    assert_eq!(out.matches('[').count(), 150);
    assert_eq!(out.matches("{\"k\":").count(), 150);
    assert!(out.starts_with("{\"k\":[{\"k\":["));
}

#[test]
fn write_js_json_appends_to_existing_bytes() {
    let mut out = b"prefix:".to_vec();
    write_js_json(&json!({"x": [1.5, "é"]}), &mut out);
    assert_eq!(out, "prefix:{\"x\":[1.5,\"é\"]}".as_bytes());
}

#[test]
fn to_js_json_agrees_with_write_js_json() {
    let value = json!({"1": "one", "z": [0.1, -0.0, "\u{1f}"], "0": null});
    let mut bytes = Vec::new();
    write_js_json(&value, &mut bytes);
    assert_eq!(to_js_json(&value).as_bytes(), bytes.as_slice());
}
