//! JSON text in exactly the form JavaScript's `JSON.stringify` produces.
//!
//! A receiver that verifies `JSON.stringify(JSON.parse(body))` instead of the
//! raw body only agrees with our signature if the body already is a fixed
//! point of that round trip. The rules, all from ECMAScript:
//!
//! - compact: no whitespace between tokens;
//! - object keys in JavaScript property order: "array index" keys (canonical
//!   decimal integers `0..=4294967294`) first in ascending numeric order,
//!   then every other key in insertion order (see `keys.rs`);
//! - numbers in the shortest round-trip form of `Number.prototype.toString`
//!   (`1` not `1.0`, `1e+21` not `1e21`, `-0` as `0`), after rounding to f64
//!   exactly as JavaScript's parser does, so integers beyond 2^53 lose
//!   precision the same way;
//! - strings escape only `"`, `\` and U+0000–U+001F (see `string.rs`).
//!
//! Duplicate keys need no handling here: with serde_json's `preserve_order`
//! a repeated key keeps its first position and takes the last value, which
//! is what `JSON.parse` does.

mod fixed;
#[cfg(test)]
mod fixed_tests;
mod keys;
mod string;
#[cfg(test)]
mod tests;

pub use fixed::is_fixed_point;

use serde_json::{Map, Number, Value};

/// Renders `value` as JavaScript's `JSON.stringify` would.
///
/// This is the body Sluice sends and signs, so a receiver verifying either
/// the raw bytes or `JSON.stringify(JSON.parse(raw))` computes the same HMAC.
pub fn to_js_json(value: &Value) -> String {
    let mut out = String::with_capacity(256);
    write_value(value, &mut out);
    out
}

/// Appends the `JSON.stringify` form of `value` to `out`.
///
/// For callers that assemble a body in a reusable buffer; existing contents
/// of `out` are left untouched.
pub fn write_js_json(value: &Value, out: &mut Vec<u8>) {
    write_value(value, out);
}

/// Appends `s` as a quoted string in the `JSON.stringify` form.
pub fn write_js_string(s: &str, out: &mut Vec<u8>) {
    string::write_quoted(s, out);
}

/// Whether JavaScript treats `key` as an "array index" and so lists it
/// before every other key of its object.
pub fn is_array_index(key: &str) -> bool {
    keys::array_index(key).is_some()
}

/// Where rendered text goes. Both sinks receive only complete UTF-8 `&str`
/// pieces, so a `String` sink stays valid UTF-8 without any checks.
trait Sink {
    fn put(&mut self, s: &str);
}

impl Sink for String {
    #[inline]
    fn put(&mut self, s: &str) {
        self.push_str(s);
    }
}

impl Sink for Vec<u8> {
    #[inline]
    fn put(&mut self, s: &str) {
        self.extend_from_slice(s.as_bytes());
    }
}

fn write_value<S: Sink>(value: &Value, out: &mut S) {
    match value {
        Value::Null => out.put("null"),
        Value::Bool(true) => out.put("true"),
        Value::Bool(false) => out.put("false"),
        Value::Number(n) => write_number(n, out),
        Value::String(s) => string::write_quoted(s, out),
        Value::Array(items) => write_array(items, out),
        Value::Object(map) => write_object(map, out),
    }
}

/// JavaScript holds every number as an f64, so the value is first rounded
/// to the nearest f64 (`u64`/`i64 as f64` rounds to nearest, ties to even,
/// which is what JavaScript's parser does with the same literal) and printed in its shortest round-trip
/// form. ryu-js prints `-0` as `0`, matching `JSON.stringify(-0)`.
fn write_number<S: Sink>(n: &Number, out: &mut S) {
    // `as_f64` converts integers with `as f64`; it is `None` only for
    // arbitrary-precision text that is not a number at all.
    write_f64(n.as_f64().unwrap_or(f64::NAN), out);
}

fn write_f64<S: Sink>(f: f64, out: &mut S) {
    if f.is_finite() {
        out.put(ryu_js::Buffer::new().format_finite(f));
    } else {
        // JSON.stringify writes non-finite numbers (e.g. an overflowing
        // literal parsed to Infinity) as null.
        out.put("null");
    }
}

fn write_array<S: Sink>(items: &[Value], out: &mut S) {
    out.put("[");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.put(",");
        }
        write_value(item, out);
    }
    out.put("]");
}

fn write_object<S: Sink>(map: &Map<String, Value>, out: &mut S) {
    out.put("{");
    let mut first = true;
    let mut member = |key: &str, value: &Value, out: &mut S| {
        if !first {
            out.put(",");
        }
        first = false;
        string::write_quoted(key, out);
        out.put(":");
        write_value(value, out);
    };
    if map.keys().any(|k| keys::array_index(k).is_some()) {
        for (_, key, value) in keys::sorted_index_entries(map) {
            member(key, value, out);
        }
        for (key, value) in map.iter().filter(|(k, _)| keys::array_index(k).is_none()) {
            member(key, value, out);
        }
    } else {
        for (key, value) in map {
            member(key, value, out);
        }
    }
    out.put("}");
}
