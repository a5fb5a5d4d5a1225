//! Dotted property paths: `properties.plan`, `context.device.type`.
//!
//! A path is one to [`MAX_DEPTH`] non-empty segments separated by `.`,
//! read from the top of the stored message. There is no escaping: keys that
//! contain a dot cannot be addressed (Segment's destination filters have the
//! same limit). Array indexes are not supported; a path stops at objects.

use serde_json::{Map, Value};

use crate::RuleError;
use crate::shape::Shape;

/// Deepest path accepted.
pub const MAX_DEPTH: usize = 8;
/// Longest path accepted, in bytes.
pub const MAX_LEN: usize = 256;

/// A validated path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PropertyPath {
    segments: Vec<String>,
}

impl PropertyPath {
    /// Parses `text`; `field` names it in the error.
    pub fn parse(text: &str, field: &str) -> Result<PropertyPath, RuleError> {
        let bad =
            |why: &str| RuleError::new(field, format!("invalid property path '{text}': {why}"));
        if text.is_empty() {
            return Err(bad("empty"));
        }
        if text.len() > MAX_LEN {
            return Err(bad("longer than 256 bytes"));
        }
        let segments: Vec<String> = text.split('.').map(str::to_owned).collect();
        if segments.iter().any(|s| s.is_empty()) {
            return Err(bad("empty segment"));
        }
        if segments.len() > MAX_DEPTH {
            return Err(bad("deeper than 8 segments"));
        }
        Ok(PropertyPath { segments })
    }

    pub fn segments(&self) -> &[String] {
        &self.segments
    }

    /// Whether `shape` shows this path holds nothing: it names a key of
    /// `properties` (track, page, screen) or `traits` (identify, group) that
    /// the event does not have. `false` when the shape cannot tell.
    pub fn absent_from(&self, shape: &Shape) -> bool {
        let [first, key, ..] = self.segments.as_slice() else {
            return false;
        };
        let top = match shape.kind {
            "track" | "page" | "screen" => "properties",
            "identify" | "group" => "traits",
            _ => return false,
        };
        first == top && !shape.fields.iter().any(|(k, _)| k == key)
    }

    /// The value at this path, if every step is an object holding the key.
    pub fn get<'a>(&self, message: &'a Map<String, Value>) -> Option<&'a Value> {
        let (first, rest) = self.segments.split_first()?;
        let mut at = message.get(first)?;
        for key in rest {
            at = at.as_object()?.get(key)?;
        }
        Some(at)
    }

    /// Removes the value at this path; returns whether something was removed.
    /// Key order of what stays is kept.
    pub fn remove(&self, message: &mut Map<String, Value>) -> bool {
        let Some((last, parents)) = self.segments.split_last() else {
            return false;
        };
        let mut at = message;
        for key in parents {
            match at.get_mut(key).and_then(Value::as_object_mut) {
                Some(next) => at = next,
                None => return false,
            }
        }
        at.shift_remove(last).is_some()
    }
}

impl std::fmt::Display for PropertyPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.segments.join("."))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn reads_nested_values() {
        let m = obj(json!({"properties": {"plan": {"tier": "pro"}}}));
        let p = PropertyPath::parse("properties.plan.tier", "f").unwrap();
        assert_eq!(p.get(&m), Some(&json!("pro")));
        let missing = PropertyPath::parse("properties.plan.seats", "f").unwrap();
        assert_eq!(missing.get(&m), None);
    }

    #[test]
    fn removes_only_the_leaf_and_keeps_order() {
        let mut m = obj(json!({"properties": {"a": 1, "email": "x", "b": 2}}));
        let p = PropertyPath::parse("properties.email", "f").unwrap();
        assert!(p.remove(&mut m));
        assert_eq!(
            serde_json::to_string(&m).unwrap(),
            r#"{"properties":{"a":1,"b":2}}"#
        );
        assert!(!p.remove(&mut m));
    }

    #[test]
    fn rejects_empty_segments_and_names_the_field() {
        for bad in ["", ".a", "a.", "a..b", "a.b.c.d.e.f.g.h.i"] {
            let e = PropertyPath::parse(bad, "filters[0].fields[1]").unwrap_err();
            assert_eq!(e.field, "filters[0].fields[1]");
        }
    }

    #[test]
    fn a_path_through_a_non_object_reads_nothing() {
        let mut m = obj(json!({"properties": "flat"}));
        let p = PropertyPath::parse("properties.x", "f").unwrap();
        assert_eq!(p.get(&m), None);
        assert!(!p.remove(&mut m));
    }
}
