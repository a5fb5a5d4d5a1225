//! `testdata/js-json/vectors.json` through Sluice's ingest sanitizer,
//! serde_json and [`to_js_json`].

use sluice_model::replace_lone_surrogates;
use sluice_signing::{to_js_json, write_js_json};

use crate::{field, load_vectors};

/// What Sluice would send for this raw request text: lone surrogate escapes
/// replaced, parsed by serde_json, rendered the JavaScript way.
fn sluice_body(input: &str) -> Result<String, serde_json::Error> {
    let sanitized = replace_lone_surrogates(input.as_bytes());
    let value: serde_json::Value = serde_json::from_slice(&sanitized)?;
    Ok(to_js_json(&value))
}

/// Runs `check` on every vector and fails once, listing every mismatch.
fn for_each_vector(check: impl Fn(&str, &str, &str) -> Option<String>) {
    let vectors = load_vectors("js-json/vectors.json");
    let failures: Vec<String> = vectors
        .iter()
        .filter_map(|v| check(field(v, "name"), field(v, "input"), field(v, "expected")))
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} vectors failed:\n{}",
        failures.len(),
        vectors.len(),
        failures.join("\n")
    );
}

fn mismatch(name: &str, what: &str, actual: &str, expected: &str) -> Option<String> {
    (actual != expected)
        .then(|| format!("{name} ({what}):\n  expected {expected:?}\n  actual   {actual:?}"))
}

#[test]
fn every_input_renders_exactly_as_expected() {
    for_each_vector(|name, input, expected| match sluice_body(input) {
        Ok(actual) => mismatch(name, "input", &actual, expected),
        Err(e) => Some(format!("{name}: input does not parse: {e}")),
    });
}

#[test]
fn every_expected_output_is_a_fixed_point() {
    for_each_vector(|name, _, expected| match sluice_body(expected) {
        Ok(actual) => mismatch(name, "expected", &actual, expected),
        Err(e) => Some(format!("{name}: expected does not parse: {e}")),
    });
}

#[test]
fn write_js_json_produces_the_same_bytes_as_to_js_json() {
    for_each_vector(|name, input, expected| {
        let sanitized = replace_lone_surrogates(input.as_bytes());
        let value: serde_json::Value = serde_json::from_slice(&sanitized).ok()?;
        let mut bytes = b"[".to_vec();
        write_js_json(&value, &mut bytes);
        mismatch(
            name,
            "write_js_json",
            &String::from_utf8_lossy(&bytes[1..]),
            expected,
        )
    });
}

#[test]
fn normalized_vectors_are_exactly_the_lone_surrogate_ones() {
    let vectors = load_vectors("js-json/vectors.json");
    for v in &vectors {
        let input = field(v, "input");
        let normalized = v["normalized"].as_bool().unwrap_or(false);
        let sanitizer_changes_input = replace_lone_surrogates(input.as_bytes()) != input.as_bytes();
        assert_eq!(normalized, sanitizer_changes_input, "{}", field(v, "name"));
        if normalized {
            assert!(
                field(v, "expected").contains('\u{fffd}'),
                "{}",
                field(v, "name")
            );
        }
    }
}

#[test]
fn vector_names_are_unique() {
    let vectors = load_vectors("js-json/vectors.json");
    let mut names: Vec<&str> = vectors.iter().map(|v| field(v, "name")).collect();
    names.sort_unstable();
    let before = names.len();
    names.dedup();
    assert_eq!(names.len(), before);
}
