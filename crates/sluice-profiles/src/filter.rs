//! Property filters and value comparisons (pure).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::DefinitionError;

/// Longest property path or trait key a definition may name, in bytes: the
/// limit of destination filters' paths (`sluice-schema`), so a path that
/// one accepts the other does too.
pub const MAX_PATH_LEN: usize = sluice_schema::path::MAX_LEN;

/// Refuses an empty or over-long trait key at `field` (a key is read
/// whole, dots and all).
pub(crate) fn check_path(field: &str, path: &str) -> Result<(), DefinitionError> {
    if path.trim().is_empty() {
        return Err(DefinitionError::new(field, "must not be empty"));
    }
    if path.len() > MAX_PATH_LEN {
        return Err(DefinitionError::new(
            field,
            format!("must be at most {MAX_PATH_LEN} bytes"),
        ));
    }
    Ok(())
}

/// Refuses a property path at `field` that destination filters would
/// refuse, with their words, through their parser
/// ([`sluice_schema::PropertyPath`]): empty, an empty segment (`a..b`,
/// `.a`, `a.`), deeper than its segment limit, or too long.
pub(crate) fn check_property_path(field: &str, path: &str) -> Result<(), DefinitionError> {
    check_path(field, path)?;
    sluice_schema::PropertyPath::parse(path, field)
        .map(drop)
        .map_err(|e| DefinitionError::new(&e.field, e.message))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    Equals,
    NotEquals,
    Contains,
    Gt,
    Lt,
    Exists,
}

/// A filter on an event property (`property` may be a dotted path).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Filter {
    pub property: String,
    pub op: Op,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
}

/// A trait (or computed trait) compared with a value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Compare {
    pub key: String,
    pub op: Op,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
}

fn check_op(field: &str, op: Op, value: Option<&Value>) -> Result<(), DefinitionError> {
    match (op, value) {
        (Op::Exists, _) => Ok(()),
        (_, None) => Err(DefinitionError::new(
            &format!("{field}.value"),
            "is required for this op",
        )),
        (Op::Gt | Op::Lt, Some(v)) if !v.is_number() => Err(DefinitionError::new(
            &format!("{field}.value"),
            "must be a number for gt/lt",
        )),
        _ => Ok(()),
    }
}

impl Filter {
    pub fn check(&self, field: &str) -> Result<(), DefinitionError> {
        check_property_path(&format!("{field}.property"), &self.property)?;
        check_op(field, self.op, self.value.as_ref())
    }

    pub fn matches(&self, properties: &Map<String, Value>) -> bool {
        compare(
            lookup(properties, &self.property),
            self.op,
            self.value.as_ref(),
        )
    }
}

impl Compare {
    pub fn check(&self, field: &str) -> Result<(), DefinitionError> {
        check_path(&format!("{field}.key"), &self.key)?;
        check_op(field, self.op, self.value.as_ref())
    }
}

/// A property by dotted path (`a.b` reads `{"a":{"b":…}}`); an exact key
/// containing a dot wins.
pub fn lookup<'a>(properties: &'a Map<String, Value>, path: &str) -> Option<&'a Value> {
    if let Some(v) = properties.get(path) {
        return Some(v);
    }
    let mut parts = path.split('.');
    let mut current = properties.get(parts.next()?)?;
    for part in parts {
        current = current.as_object()?.get(part)?;
    }
    Some(current)
}

/// Applies `op`. A missing or null value only satisfies `not_equals`.
/// Numbers compare as numbers (`1` equals `1.0`); `gt`/`lt` need numbers on
/// both sides (a string property never matches: mixed types are ignored);
/// `contains` is substring on strings and membership on arrays.
pub fn compare(actual: Option<&Value>, op: Op, expected: Option<&Value>) -> bool {
    let actual = actual.filter(|v| !v.is_null());
    match op {
        Op::Exists => actual.is_some(),
        Op::Equals => actual.is_some_and(|a| expected.is_some_and(|e| same(a, e))),
        Op::NotEquals => !actual.is_some_and(|a| expected.is_some_and(|e| same(a, e))),
        Op::Contains => match (actual, expected) {
            (Some(Value::String(a)), Some(Value::String(e))) => a.contains(e.as_str()),
            (Some(Value::Array(items)), Some(e)) => items.iter().any(|i| same(i, e)),
            _ => false,
        },
        Op::Gt | Op::Lt => match (
            actual.and_then(Value::as_f64),
            expected.and_then(Value::as_f64),
        ) {
            (Some(a), Some(e)) => {
                if op == Op::Gt {
                    a > e
                } else {
                    a < e
                }
            }
            _ => false,
        },
    }
}

/// JSON equality with numbers compared by value.
pub fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) if a.is_number() && b.is_number() => x == y,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn props() -> Map<String, Value> {
        json!({"plan": "pro", "total": 12.5, "tags": ["a", "b"], "nested": {"x": 1}, "none": null})
            .as_object()
            .cloned()
            .unwrap_or_default()
    }

    #[test]
    fn each_op_matches_as_documented() {
        let p = props();
        let f = |property: &str, op: Op, value: Option<Value>| {
            Filter {
                property: property.into(),
                op,
                value,
            }
            .matches(&p)
        };
        assert!(f("plan", Op::Equals, Some(json!("pro"))));
        assert!(!f("plan", Op::Equals, Some(json!("free"))));
        assert!(f("plan", Op::NotEquals, Some(json!("free"))));
        assert!(f("missing", Op::NotEquals, Some(json!("free"))));
        assert!(f("plan", Op::Contains, Some(json!("r"))));
        assert!(f("tags", Op::Contains, Some(json!("b"))));
        assert!(f("total", Op::Gt, Some(json!(12))));
        assert!(!f("total", Op::Lt, Some(json!(12))));
        assert!(
            !f("plan", Op::Gt, Some(json!(1))),
            "strings never compare with numbers"
        );
        assert!(f("nested.x", Op::Equals, Some(json!(1.0))));
        assert!(f("plan", Op::Exists, None));
        assert!(!f("none", Op::Exists, None));
        assert!(!f("missing", Op::Exists, None));
    }

    #[test]
    fn gt_needs_a_numeric_value() {
        let bad = Filter {
            property: "a".into(),
            op: Op::Gt,
            value: Some(json!("x")),
        };
        let err = bad.check("definition.where[0]").unwrap_err();
        assert_eq!(err.field, "definition.where[0].value");
    }
}
