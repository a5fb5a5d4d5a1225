//! The builder form's fields and the definition they make (pure: no I/O,
//! unit-tested below). The admin API checks the result; the form only
//! assembles it, so its messages are the API's.

use serde_json::{Map, Value, json};
use sluice_api::ApiError;

use crate::form::Form;
use crate::widgets::typed_value;

pub const TRAIT_KINDS: &[(&str, &str)] = &[
    ("counter", "Counter: how many matching events"),
    ("sum", "Sum of a property"),
    ("avg", "Average of a property"),
    ("min", "Minimum of a property"),
    ("max", "Maximum of a property"),
    ("most_frequent", "Most frequent value of a property"),
    ("first", "First value of a property"),
    ("last", "Last value of a property"),
    ("unique_list", "Distinct values of a property"),
    ("unique_count", "Number of distinct values of a property"),
];
pub const FILTER_OPS: &[&str] = &["equals", "not_equals", "contains", "gt", "lt", "exists"];
pub const COUNT_OPS: &[(&str, &str)] = &[
    ("at_least", "at least"),
    ("at_most", "at most"),
    ("exactly", "exactly"),
];
pub const UNITS: &[&str] = &["days", "hours"];
/// Property filter rows in the trait builder.
pub const WHERE_ROWS: usize = 3;

/// Everything the builder form holds, as typed.
#[derive(Debug, Default, Clone)]
pub struct Draft {
    pub name: String,
    pub key: String,
    pub destinations: Vec<String>,
    // Computed trait.
    pub kind: String,
    pub event: String,
    pub property: String,
    /// (property, op, value) per filter row.
    pub filters: Vec<(String, String, String)>,
    pub window_n: String,
    pub window_unit: String,
    // Audience.
    pub include_anonymous: bool,
    pub performed: String,
    pub count_op: String,
    pub count_n: String,
    pub not_performed: String,
    pub trait_key: String,
    pub trait_op: String,
    pub trait_value: String,
    pub computed_key: String,
    pub computed_op: String,
    pub computed_value: String,
    /// A whole condition tree as JSON; when set it replaces the fields above.
    pub condition_json: String,
}

impl Draft {
    pub fn from_form(f: &Form) -> Draft {
        let g = |k: &str| f.get(k).to_owned();
        Draft {
            name: g("name"),
            key: g("key"),
            destinations: f.all("destination_ids"),
            kind: g("kind"),
            event: g("event"),
            property: g("property"),
            filters: (0..WHERE_ROWS)
                .map(|i| {
                    (
                        g(&format!("w{i}_property")),
                        g(&format!("w{i}_op")),
                        f.raw(&format!("w{i}_value")).to_owned(),
                    )
                })
                .collect(),
            window_n: g("window_n"),
            window_unit: g("window_unit"),
            include_anonymous: f.checked("include_anonymous"),
            performed: g("performed"),
            count_op: g("count_op"),
            count_n: g("count_n"),
            not_performed: g("not_performed"),
            trait_key: g("trait_key"),
            trait_op: g("trait_op"),
            trait_value: f.raw("trait_value").to_owned(),
            computed_key: g("computed_key"),
            computed_op: g("computed_op"),
            computed_value: f.raw("computed_value").to_owned(),
            condition_json: f.raw("condition_json").trim().to_owned(),
        }
    }

    /// The filter row `i`, empty when absent.
    pub fn filter(&self, i: usize) -> (&str, &str, &str) {
        self.filters.get(i).map_or(("", "", ""), |(p, o, v)| {
            (p.as_str(), o.as_str(), v.as_str())
        })
    }

    fn window(&self) -> Option<Value> {
        if self.window_n.is_empty() {
            return None;
        }
        let unit = if self.window_unit == "hours" {
            "hours"
        } else {
            "days"
        };
        Some(json!({ unit: typed_value(&self.window_n) }))
    }

    fn where_list(&self) -> Vec<Value> {
        self.filters
            .iter()
            .filter(|(p, _, _)| !p.is_empty())
            .map(|(p, op, v)| {
                let mut f = json!({"property": p, "op": op});
                if op != "exists" {
                    f["value"] = typed_value(v);
                }
                f
            })
            .collect()
    }

    /// A computed trait's definition.
    pub fn trait_definition(&self) -> Value {
        let mut d = Map::new();
        d.insert("kind".into(), json!(self.kind));
        d.insert("event".into(), json!(self.event));
        // The form keeps a property typed before the kind became `counter`
        // (the field is labelled "all kinds but counter"); a counter has
        // none, and the API refuses one, so it is left out.
        if !self.property.is_empty() && self.kind != "counter" {
            d.insert("property".into(), json!(self.property));
        }
        let filters = self.where_list();
        if !filters.is_empty() {
            d.insert("where".into(), Value::Array(filters));
        }
        if let Some(w) = self.window() {
            d.insert("window".into(), w);
        }
        Value::Object(d)
    }

    /// An audience's definition: the JSON condition when given, else the
    /// structured conditions joined with `and` (one alone stands alone).
    pub fn audience_definition(&self) -> Result<Value, ApiError> {
        let condition = if self.condition_json.is_empty() {
            let mut parts = Vec::new();
            if !self.performed.is_empty() {
                let mut p = json!({"event": self.performed});
                if !self.count_n.is_empty() {
                    let op = if COUNT_OPS.iter().any(|(o, _)| *o == self.count_op) {
                        self.count_op.as_str()
                    } else {
                        "at_least"
                    };
                    p["count"] = json!({ op: typed_value(&self.count_n) });
                }
                if let Some(w) = self.window() {
                    p["window"] = w;
                }
                parts.push(json!({ "performed": p }));
            }
            if !self.not_performed.is_empty() {
                let mut p = json!({"event": self.not_performed});
                if let Some(w) = self.window() {
                    p["window"] = w;
                }
                parts.push(json!({ "not_performed": p }));
            }
            for (name, key, op, value) in [
                ("trait", &self.trait_key, &self.trait_op, &self.trait_value),
                (
                    "computed_trait",
                    &self.computed_key,
                    &self.computed_op,
                    &self.computed_value,
                ),
            ] {
                if !key.is_empty() {
                    let mut c = json!({"key": key, "op": op});
                    if op != "exists" {
                        c["value"] = typed_value(value);
                    }
                    parts.push(json!({ name: c }));
                }
            }
            if parts.len() == 1 {
                parts.remove(0)
            } else {
                json!({ "and": parts })
            }
        } else {
            serde_json::from_str(&self.condition_json).map_err(|e| {
                ApiError::bad_request("invalid_json", format!("condition: invalid JSON: {e}"))
            })?
        };
        Ok(json!({"condition": condition, "include_anonymous": self.include_anonymous}))
    }

    /// The admin API's request body (`preview` asks for a dry run).
    pub fn body(&self, audience: bool, preview: bool) -> Result<Map<String, Value>, ApiError> {
        let mut b = Map::new();
        b.insert("name".into(), json!(self.name));
        if !self.key.is_empty() {
            b.insert("key".into(), json!(self.key));
        }
        b.insert("destination_ids".into(), json!(self.destinations));
        let def = if audience {
            self.audience_definition()?
        } else {
            self.trait_definition()
        };
        b.insert("definition".into(), def);
        if preview {
            b.insert("preview".into(), Value::Bool(true));
        }
        Ok(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trait_draft_makes_the_documented_definition() {
        let d = Draft {
            kind: "counter".into(),
            event: "Order Completed".into(),
            filters: vec![
                ("total".into(), "gt".into(), "10".into()),
                (String::new(), "equals".into(), String::new()),
            ],
            window_n: "7".into(),
            window_unit: "days".into(),
            property: "typed before switching to counter".into(),
            ..Draft::default()
        };
        assert_eq!(
            d.trait_definition(),
            json!({"kind": "counter", "event": "Order Completed",
                   "where": [{"property": "total", "op": "gt", "value": 10}],
                   "window": {"days": 7}})
        );
    }

    #[test]
    fn audience_fields_join_with_and_and_json_replaces_them() {
        let mut d = Draft {
            performed: "Order Completed".into(),
            count_op: "at_least".into(),
            count_n: "2".into(),
            trait_key: "plan".into(),
            trait_op: "equals".into(),
            trait_value: "pro".into(),
            ..Draft::default()
        };
        assert_eq!(
            d.audience_definition().ok(),
            Some(json!({"condition": {"and": [
                {"performed": {"event": "Order Completed", "count": {"at_least": 2}}},
                {"trait": {"key": "plan", "op": "equals", "value": "pro"}}
            ]}, "include_anonymous": false}))
        );
        d.condition_json = r#"{"audience": "buyers"}"#.into();
        assert_eq!(
            d.audience_definition().ok(),
            Some(json!({"condition": {"audience": "buyers"}, "include_anonymous": false}))
        );
        d.condition_json = "{".into();
        assert!(d.audience_definition().is_err());
    }

    #[test]
    fn one_audience_condition_stands_alone() {
        let d = Draft {
            performed: "Signed Up".into(),
            ..Draft::default()
        };
        assert_eq!(
            d.audience_definition().ok(),
            Some(
                json!({"condition": {"performed": {"event": "Signed Up"}}, "include_anonymous": false})
            )
        );
    }
}
