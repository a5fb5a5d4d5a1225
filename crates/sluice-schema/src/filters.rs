//! A destination's filters, applied at ingest to decide what it is sent.
//!
//! Document (what the admin API takes and shows):
//!
//! ```json
//! {"filters": [
//!   {"name": "no test events", "action": "drop",
//!    "when": {"field": "event", "op": "in", "values": ["Test"]}},
//!   {"name": "no pii", "action": "drop_fields",
//!    "fields": ["properties.email", "traits.ssn"]}
//! ]}
//! ```
//!
//! `drop` filters are tried in order; the first whose `when` matches drops
//! the event for this destination, and the delivery is recorded as filtered
//! with that filter's name. Otherwise every `drop_fields` filter whose
//! `when` matches (or that has none) removes its fields from the message
//! this destination is sent.

use serde_json::{Map, Value};

use crate::RuleError;
use crate::condition::Condition;
use crate::path::PropertyPath;
use crate::shape::Shape;

/// Most filters one destination may have.
pub const MAX_FILTERS: usize = 50;
/// Most fields one `drop_fields` filter may list.
pub const MAX_FIELDS: usize = 100;

#[derive(Debug, Clone, PartialEq)]
enum Action {
    Drop,
    DropFields(Vec<PropertyPath>),
}

#[derive(Debug, Clone, PartialEq)]
struct Filter {
    name: String,
    action: Action,
    when: Option<Condition>,
}

/// The parsed filters of one destination.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FilterSet {
    filters: Vec<Filter>,
    needs_message: bool,
    /// The document as given, for display.
    document: Value,
}

/// What the filters decide for one event and one destination.
#[derive(Debug, Clone, PartialEq)]
pub enum FilterOutcome {
    /// Send the stored body as it is.
    Send,
    /// Send this body instead (fields removed).
    SendBody(String),
    /// Do not send; dropped by the named filter.
    Drop(String),
}

impl FilterSet {
    /// Parses `{"filters": [...]}`, naming the offending field on error.
    pub fn parse(doc: &Value) -> Result<FilterSet, RuleError> {
        let obj = doc
            .as_object()
            .ok_or_else(|| RuleError::new("filters", "body must be an object with 'filters'"))?;
        if let Some(k) = obj.keys().find(|k| *k != "filters") {
            return Err(RuleError::new(
                k.as_str(),
                "unknown field (fields: filters)",
            ));
        }
        let list = match obj.get("filters") {
            Some(Value::Array(list)) => list,
            _ => return Err(RuleError::new("filters", "must be an array")),
        };
        if list.len() > MAX_FILTERS {
            return Err(RuleError::new(
                "filters",
                format!("at most {MAX_FILTERS} filters"),
            ));
        }
        let mut filters: Vec<Filter> = Vec::with_capacity(list.len());
        for (i, item) in list.iter().enumerate() {
            let filter = parse_filter(item, &format!("filters[{i}]"))?;
            if filters.iter().any(|f| f.name == filter.name) {
                return Err(RuleError::new(
                    format!("filters[{i}].name"),
                    "is used twice",
                ));
            }
            filters.push(filter);
        }
        let needs_message = filters.iter().any(|f| {
            matches!(f.action, Action::DropFields(_))
                || f.when.as_ref().is_some_and(Condition::needs_message)
        });
        Ok(FilterSet {
            filters,
            needs_message,
            document: doc.clone(),
        })
    }

    pub fn is_empty(&self) -> bool {
        self.filters.is_empty()
    }

    /// The document as given.
    pub fn document(&self) -> &Value {
        &self.document
    }

    /// Decides what this destination gets for the event with `shape` and
    /// stored `body`.
    pub fn apply(&self, shape: &Shape, body: &str) -> FilterOutcome {
        if self.filters.is_empty() {
            return FilterOutcome::Send;
        }
        let mut message: Option<Map<String, Value>> = if self.needs_message {
            serde_json::from_str(body).ok()
        } else {
            None
        };
        let matches = |f: &Filter, m: Option<&Map<String, Value>>| {
            f.when.as_ref().is_none_or(|c| c.matches(shape, m))
        };
        for f in &self.filters {
            if f.action == Action::Drop && matches(f, message.as_ref()) {
                return FilterOutcome::Drop(f.name.clone());
            }
        }
        let Some(mut m) = message.take() else {
            return FilterOutcome::Send;
        };
        let mut changed = false;
        for f in &self.filters {
            if let Action::DropFields(paths) = &f.action
                && matches(f, Some(&m))
            {
                for p in paths {
                    changed |= p.remove(&mut m);
                }
            }
        }
        match changed.then(|| serde_json::to_string(&m)) {
            Some(Ok(text)) => FilterOutcome::SendBody(text),
            _ => FilterOutcome::Send,
        }
    }
}

fn parse_filter(doc: &Value, at: &str) -> Result<Filter, RuleError> {
    let obj = doc
        .as_object()
        .ok_or_else(|| RuleError::new(at, "must be an object"))?;
    if let Some(k) = obj
        .keys()
        .find(|k| !["name", "action", "when", "fields"].contains(&k.as_str()))
    {
        return Err(RuleError::new(
            format!("{at}.{k}"),
            "unknown field (fields: name, action, when, fields)",
        ));
    }
    let name = match obj.get("name").and_then(Value::as_str).map(str::trim) {
        Some(n) if !n.is_empty() && n.chars().count() <= 200 => n.to_owned(),
        _ => {
            return Err(RuleError::new(
                format!("{at}.name"),
                "must be 1 to 200 characters",
            ));
        }
    };
    let action_name = obj.get("action").and_then(Value::as_str);
    if !matches!(action_name, Some("drop" | "drop_fields")) {
        return Err(RuleError::new(
            format!("{at}.action"),
            "must be 'drop' or 'drop_fields'",
        ));
    }
    let when = obj
        .get("when")
        .filter(|v| !v.is_null())
        .map(|w| Condition::parse(w, &format!("{at}.when")))
        .transpose()?;
    let action = match action_name {
        Some("drop") => {
            if when.is_none() {
                return Err(RuleError::new(format!("{at}.when"), "is required for drop"));
            }
            Action::Drop
        }
        Some("drop_fields") => {
            let fields_at = format!("{at}.fields");
            let list = match obj.get("fields") {
                Some(Value::Array(l)) if !l.is_empty() && l.len() <= MAX_FIELDS => l,
                _ => {
                    return Err(RuleError::new(
                        fields_at,
                        format!("must be an array of 1 to {MAX_FIELDS} property paths"),
                    ));
                }
            };
            let mut paths = Vec::with_capacity(list.len());
            for (i, p) in list.iter().enumerate() {
                let field = format!("{fields_at}[{i}]");
                let text = p
                    .as_str()
                    .ok_or_else(|| RuleError::new(&field, "must be a string"))?;
                let path = PropertyPath::parse(text, &field)?;
                if path.segments().len() < 2 {
                    return Err(RuleError::new(
                        field,
                        format!(
                            "invalid property path '{text}': name a key inside an object (properties.x, traits.x)"
                        ),
                    ));
                }
                paths.push(path);
            }
            Action::DropFields(paths)
        }
        _ => {
            return Err(RuleError::new(
                format!("{at}.action"),
                "must be 'drop' or 'drop_fields'",
            ));
        }
    };
    if obj.contains_key("fields") && action == Action::Drop {
        return Err(RuleError::new(
            format!("{at}.fields"),
            "only drop_fields takes fields",
        ));
    }
    Ok(Filter { name, action, when })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn apply(doc: Value, body: &str) -> FilterOutcome {
        let set = FilterSet::parse(&doc).unwrap();
        set.apply(&Shape::of(body, "track"), body)
    }

    #[test]
    fn first_matching_drop_filter_names_the_drop() {
        let doc = json!({"filters": [
            {"name": "only orders", "action": "drop", "when": {"field": "event", "op": "not_in", "values": ["Order"]}},
            {"name": "no identify", "action": "drop", "when": {"field": "type", "op": "in", "values": ["identify"]}}
        ]});
        let out = apply(doc.clone(), r#"{"type":"track","event":"Click"}"#);
        assert_eq!(out, FilterOutcome::Drop("only orders".into()));
        assert_eq!(
            apply(doc, r#"{"type":"track","event":"Order"}"#),
            FilterOutcome::Send
        );
    }

    #[test]
    fn drop_by_property_condition() {
        let doc = json!({"filters": [{"name": "big", "action": "drop",
            "when": {"field": "properties.total", "op": "gte", "value": 1000}}]});
        let big = r#"{"type":"track","event":"O","properties":{"total":1000}}"#;
        assert_eq!(apply(doc.clone(), big), FilterOutcome::Drop("big".into()));
        let small = r#"{"type":"track","event":"O","properties":{"total":10}}"#;
        assert_eq!(apply(doc, small), FilterOutcome::Send);
    }

    #[test]
    fn drop_fields_removes_listed_paths_only() {
        let doc = json!({"filters": [{"name": "pii", "action": "drop_fields",
            "fields": ["properties.email", "traits.ssn"]}]});
        let body = r#"{"type":"track","event":"O","properties":{"email":"a@b","total":1}}"#;
        assert_eq!(
            apply(doc.clone(), body),
            FilterOutcome::SendBody(
                r#"{"type":"track","event":"O","properties":{"total":1}}"#.into()
            )
        );
        let clean = r#"{"type":"track","event":"O","properties":{"total":1}}"#;
        assert_eq!(apply(doc, clean), FilterOutcome::Send);
    }

    #[test]
    fn errors_name_the_field() {
        let cases = [
            (
                json!({"filters": [{"name": "a", "action": "drop"}]}),
                "filters[0].when",
            ),
            (
                json!({"filters": [{"name": "a", "action": "zap"}]}),
                "filters[0].action",
            ),
            (
                json!({"filters": [{"name": "", "action": "drop"}]}),
                "filters[0].name",
            ),
            (
                json!({"filters": [{"name": "a", "action": "drop_fields", "fields": ["properties..x"]}]}),
                "filters[0].fields[0]",
            ),
            (
                json!({"filters": [{"name": "a", "action": "drop_fields", "fields": ["traits"]}]}),
                "filters[0].fields[0]",
            ),
            (
                json!({"filters": [{"name": "a", "action": "drop", "when": {"field": "x.", "op": "exists"}}]}),
                "filters[0].when.field",
            ),
            (
                json!({"filters": [{"name": "a", "action": "drop_fields", "fields": ["p.x"]},
                                {"name": "a", "action": "drop_fields", "fields": ["p.y"]}]}),
                "filters[1].name",
            ),
            (json!({"filters": 1}), "filters"),
        ];
        for (doc, field) in cases {
            assert_eq!(FilterSet::parse(&doc).unwrap_err().field, field, "{doc}");
        }
    }
}
