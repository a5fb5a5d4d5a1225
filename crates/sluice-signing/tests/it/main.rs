//! Integration tests: the cross-language vectors in `testdata/` that
//! `testdata/js-json/check.mjs` checks against Node itself.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failure panics with its message (clippy.toml allows it only inside #[test] functions)"
)]

mod js_json_vectors;
mod signature_vectors;

use std::path::PathBuf;

use serde_json::Value;

/// Reads `testdata/<relative>` as a non-empty JSON array.
pub fn load_vectors(relative: &str) -> Vec<Value> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata")
        .join(relative);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let Value::Array(vectors) = serde_json::from_str(&text).unwrap() else {
        panic!("{} is not a JSON array", path.display());
    };
    assert!(!vectors.is_empty(), "{} is empty", path.display());
    vectors
}

/// A required string field of a vector.
pub fn field<'a>(vector: &'a Value, key: &str) -> &'a str {
    vector[key]
        .as_str()
        .unwrap_or_else(|| panic!("vector {vector} lacks string field {key:?}"))
}
