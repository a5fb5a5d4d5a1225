//! Conditions that destination filters test.
//!
//! ```json
//! {"field": "type",  "op": "in",     "values": ["identify", "group"]}
//! {"field": "event", "op": "not_in", "values": ["Order Completed"]}
//! {"field": "properties.total", "op": "gt", "value": 100}
//! ```
//!
//! `field` is `type` (the call type), `event` (the track event name, or the
//! page or screen name), or a property path read from the message top
//! (`properties.plan`, `traits.email`, `context.device.type`). Operators:
//! `in`, `not_in` (with `values`), `eq`, `ne`, `gt`, `gte`, `lt`, `lte`,
//! `contains` (with `value`), `exists`, `not_exists` (no operand). Numbers
//! compare as numbers; `contains` is substring on strings, membership on
//! arrays. A missing value matches `ne`, `not_in` and `not_exists` only.

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::RuleError;
use crate::path::PropertyPath;
use crate::shape::Shape;
use sluice_model::EventType;

#[derive(Debug, Clone, PartialEq)]
enum Field {
    Type,
    Event,
    Path(PropertyPath),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    In,
    NotIn,
    Eq,
    Ne,
    Gt,
    Gte,
    Lt,
    Lte,
    Contains,
    Exists,
    NotExists,
}

const OPS: [(&str, Op); 11] = [
    ("in", Op::In),
    ("not_in", Op::NotIn),
    ("eq", Op::Eq),
    ("ne", Op::Ne),
    ("gt", Op::Gt),
    ("gte", Op::Gte),
    ("lt", Op::Lt),
    ("lte", Op::Lte),
    ("contains", Op::Contains),
    ("exists", Op::Exists),
    ("not_exists", Op::NotExists),
];

/// One parsed condition.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    field: Field,
    op: Op,
    /// `values` for `in`/`not_in`, else the single `value` (if any).
    operands: Vec<Value>,
    /// The string operands of `in`/`not_in`, hashed once at parse.
    strings: HashSet<String>,
}

impl Condition {
    /// Parses a condition object found at `at` (e.g. `filters[0].when`).
    pub fn parse(doc: &Value, at: &str) -> Result<Condition, RuleError> {
        let obj = doc
            .as_object()
            .ok_or_else(|| RuleError::new(at, "must be an object"))?;
        if let Some(k) = obj
            .keys()
            .find(|k| !["field", "op", "value", "values"].contains(&k.as_str()))
        {
            return Err(RuleError::new(
                format!("{at}.{k}"),
                "unknown field (fields: field, op, value, values)",
            ));
        }
        let field_at = format!("{at}.field");
        let field = match obj.get("field").and_then(Value::as_str) {
            Some("type") => Field::Type,
            Some("event") => Field::Event,
            Some(path) => Field::Path(PropertyPath::parse(path, &field_at)?),
            None => return Err(RuleError::new(field_at, "is required (a string)")),
        };
        let op_at = format!("{at}.op");
        let op_name = obj
            .get("op")
            .and_then(Value::as_str)
            .ok_or_else(|| RuleError::new(&op_at, "is required (a string)"))?;
        let op = OPS
            .iter()
            .find(|(name, _)| *name == op_name)
            .map(|(_, op)| *op)
            .ok_or_else(|| {
                let names: Vec<&str> = OPS.iter().map(|(n, _)| *n).collect();
                RuleError::new(
                    &op_at,
                    format!(
                        "unknown operator '{op_name}' (one of: {})",
                        names.join(", ")
                    ),
                )
            })?;
        let operands = match op {
            Op::In | Op::NotIn => match obj.get("values") {
                Some(Value::Array(v)) => v.clone(),
                _ => return Err(RuleError::new(format!("{at}.values"), "must be an array")),
            },
            Op::Exists | Op::NotExists => Vec::new(),
            _ => match obj.get("value") {
                Some(v) => vec![v.clone()],
                None => return Err(RuleError::new(format!("{at}.value"), "is required")),
            },
        };
        if matches!(field, Field::Type | Field::Event)
            && !matches!(op, Op::In | Op::NotIn | Op::Eq | Op::Ne)
        {
            return Err(RuleError::new(
                op_at,
                "type and event take in, not_in, eq or ne",
            ));
        }
        if matches!(op, Op::Gt | Op::Gte | Op::Lt | Op::Lte) && !operands[0].is_number() {
            return Err(RuleError::new(format!("{at}.value"), "must be a number"));
        }
        let strings = match op {
            Op::In | Op::NotIn => operands
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            _ => HashSet::new(),
        };
        Ok(Condition {
            field,
            op,
            operands,
            strings,
        })
    }

    /// Whether evaluating needs the whole message rather than its shape.
    pub fn needs_message(&self) -> bool {
        matches!(self.field, Field::Path(_))
    }

    /// The property path the condition reads, if it reads one.
    pub fn path(&self) -> Option<&PropertyPath> {
        match &self.field {
            Field::Path(p) => Some(p),
            _ => None,
        }
    }

    /// Tests the condition. `message` must be given when
    /// [`Condition::needs_message`]; without it a path reads as missing.
    pub fn matches(&self, shape: &Shape, message: Option<&Map<String, Value>>) -> bool {
        let value = self.path().and_then(|p| message.and_then(|m| p.get(m)));
        self.test(shape, value)
    }

    /// Tests the condition on an event's shape, `value` being what its
    /// property path (if any) holds. Allocates nothing.
    pub fn test(&self, shape: &Shape, value: Option<&Value>) -> bool {
        match &self.field {
            Field::Type => self.test_str(Some(shape.kind)),
            Field::Event => self.test_str(shape.name.as_deref()),
            Field::Path(_) => self.test_value(value),
        }
    }

    /// `type` and `event` take only `in`, `not_in`, `eq` and `ne`.
    fn test_str(&self, s: Option<&str>) -> bool {
        let first = self.operands.first().and_then(Value::as_str);
        match (self.op, s) {
            (Op::NotIn | Op::Ne, None) => true,
            (_, None) => false,
            (Op::In, Some(s)) => self.strings.contains(s),
            (Op::NotIn, Some(s)) => !self.strings.contains(s),
            (Op::Eq, Some(s)) => first == Some(s),
            (Op::Ne, Some(s)) => first != Some(s),
            _ => false,
        }
    }

    fn test_value(&self, value: Option<&Value>) -> bool {
        let first = self.operands.first();
        match (self.op, value) {
            (Op::Exists, v) => v.is_some(),
            (Op::NotExists, v) => v.is_none(),
            (Op::NotIn | Op::Ne, None) => true,
            (_, None) => false,
            (Op::In, Some(v)) => self.operands.iter().any(|o| same(o, v)),
            (Op::NotIn, Some(v)) => !self.operands.iter().any(|o| same(o, v)),
            (Op::Eq, Some(v)) => first.is_some_and(|o| same(o, v)),
            (Op::Ne, Some(v)) => !first.is_some_and(|o| same(o, v)),
            (Op::Contains, Some(v)) => match (v, first) {
                (Value::String(s), Some(Value::String(needle))) => s.contains(needle.as_str()),
                (Value::Array(items), Some(o)) => items.iter().any(|i| same(i, o)),
                _ => false,
            },
            (op, Some(v)) => {
                let (Some(a), Some(b)) = (v.as_f64(), first.and_then(Value::as_f64)) else {
                    return false;
                };
                match op {
                    Op::Gt => a > b,
                    Op::Gte => a >= b,
                    Op::Lt => a < b,
                    _ => a <= b,
                }
            }
        }
    }
}

/// Equality where numbers compare by value (`1` equals `1.0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) if a.is_number() && b.is_number() => x == y,
        _ => a == b,
    }
}

/// Checks that a `type` condition's operands are call types, as calls
/// carry them (lower case): a typo or `"Group"` would never match, silently.
/// Only for filters being saved ([`crate::FilterSet::parse_new`]); stored
/// ones load as they were saved.
pub(crate) fn check_call_types(doc: &Value, at: &str) -> Result<(), RuleError> {
    if doc.get("field").and_then(Value::as_str) != Some("type") {
        return Ok(());
    }
    let named: Vec<(String, &Value)> = match doc.get("values") {
        Some(Value::Array(values)) => values
            .iter()
            .enumerate()
            .map(|(i, v)| (format!("{at}.values[{i}]"), v))
            .collect(),
        _ => doc
            .get("value")
            .map(|v| (format!("{at}.value"), v))
            .into_iter()
            .collect(),
    };
    match named
        .into_iter()
        .find(|(_, v)| v.as_str().and_then(EventType::from_name).is_none())
    {
        Some((field, value)) => Err(RuleError::new(
            field,
            format!(
                "{value} is not a call type (track, page, screen, identify, group or alias, \
                 in lower case)"
            ),
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(cond: Value, body: Value) -> bool {
        let c = Condition::parse(&cond, "when").unwrap();
        let text = body.to_string();
        let shape = Shape::of(&text, "track");
        c.matches(&shape, body.as_object())
    }

    #[test]
    fn type_and_event_lists() {
        let body = json!({"type": "track", "event": "Clicked"});
        assert!(check(
            json!({"field": "type", "op": "in", "values": ["track"]}),
            body.clone()
        ));
        assert!(!check(
            json!({"field": "type", "op": "not_in", "values": ["track"]}),
            body.clone()
        ));
        assert!(check(
            json!({"field": "event", "op": "not_in", "values": ["Viewed"]}),
            body.clone()
        ));
        assert!(check(
            json!({"field": "event", "op": "eq", "value": "Clicked"}),
            body
        ));
    }

    #[test]
    fn property_comparisons() {
        let body =
            json!({"type": "track", "properties": {"total": 120, "tag": "beta-x", "list": ["a"]}});
        assert!(check(
            json!({"field": "properties.total", "op": "gt", "value": 100}),
            body.clone()
        ));
        assert!(!check(
            json!({"field": "properties.total", "op": "lt", "value": 100}),
            body.clone()
        ));
        assert!(check(
            json!({"field": "properties.total", "op": "eq", "value": 120.0}),
            body.clone()
        ));
        assert!(check(
            json!({"field": "properties.tag", "op": "contains", "value": "beta"}),
            body.clone()
        ));
        assert!(check(
            json!({"field": "properties.list", "op": "contains", "value": "a"}),
            body.clone()
        ));
        assert!(check(
            json!({"field": "properties.none", "op": "not_exists"}),
            body.clone()
        ));
        assert!(check(
            json!({"field": "properties.none", "op": "ne", "value": 1}),
            body.clone()
        ));
        assert!(!check(
            json!({"field": "properties.none", "op": "eq", "value": 1}),
            body
        ));
    }

    #[test]
    fn parse_errors_name_the_field() {
        let cases = [
            (json!({"op": "in", "values": []}), "when.field"),
            (json!({"field": "a..b", "op": "exists"}), "when.field"),
            (json!({"field": "type", "op": "like"}), "when.op"),
            (json!({"field": "type", "op": "gt", "value": 1}), "when.op"),
            (
                json!({"field": "type", "op": "in", "values": "x"}),
                "when.values",
            ),
            (
                json!({"field": "properties.a", "op": "gt", "value": "x"}),
                "when.value",
            ),
            (json!({"field": "properties.a", "op": "eq"}), "when.value"),
            (
                json!({"field": "type", "op": "in", "values": [], "extra": 1}),
                "when.extra",
            ),
        ];
        for (doc, field) in cases {
            assert_eq!(
                Condition::parse(&doc, "when").unwrap_err().field,
                field,
                "{doc}"
            );
        }
    }

    #[test]
    fn type_conditions_being_saved_name_only_call_types() {
        let cases = [
            (
                json!({"field": "type", "op": "in", "values": ["track", "Group"]}),
                "when.values[1]",
            ),
            (
                json!({"field": "type", "op": "eq", "value": "idenitfy"}),
                "when.value",
            ),
            (
                json!({"field": "type", "op": "not_in", "values": [3]}),
                "when.values[0]",
            ),
        ];
        for (doc, field) in cases {
            assert!(Condition::parse(&doc, "when").is_ok(), "stored ones load");
            assert_eq!(check_call_types(&doc, "when").unwrap_err().field, field);
        }
        let good = json!({"field": "type", "op": "in", "values": ["alias", "group"]});
        assert!(check_call_types(&good, "when").is_ok());
        let other = json!({"field": "event", "op": "eq", "value": "Group"});
        assert!(check_call_types(&other, "when").is_ok());
    }
}
