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
use sluice_model::Outline;

use crate::RuleError;
use crate::condition::Condition;
use crate::path::PropertyPath;
use crate::read::read_paths;
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

/// The parsed filters of one destination, compiled for evaluation: the
/// property paths their conditions read are listed once, so one pass over
/// an event's text reads them all.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FilterSet {
    filters: Vec<Filter>,
    /// Distinct property paths read by the filters' conditions or removed
    /// by their `drop_fields`.
    paths: Vec<PropertyPath>,
    /// For each filter, the index in `paths` of the path its `when` reads.
    reads: Vec<Option<usize>>,
    /// For each filter, the indexes in `paths` of the fields it removes.
    removes: Vec<Vec<usize>>,
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
    /// [`FilterSet::parse`] for filters being saved, which must also name
    /// only call types in `type` conditions. A filter kept exactly as it is
    /// in `previous` (the set stored before) is not checked again, so that
    /// a set saved before this check loads and can still be edited; stored
    /// sets load with `parse`.
    pub fn parse_new(doc: &Value, previous: Option<&Value>) -> Result<FilterSet, RuleError> {
        let set = FilterSet::parse(doc)?;
        let kept: &[Value] = previous
            .and_then(|p| p.get("filters"))
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice);
        let list = doc.get("filters").and_then(Value::as_array);
        for (i, filter) in list.into_iter().flatten().enumerate() {
            if kept.contains(filter) {
                continue;
            }
            if let Some(when) = filter.get("when") {
                crate::condition::check_call_types(when, &format!("filters[{i}].when"))?;
            }
        }
        Ok(set)
    }

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
        let mut paths: Vec<PropertyPath> = Vec::new();
        let mut index_of = |path: &PropertyPath| match paths.iter().position(|p| p == path) {
            Some(i) => i,
            None => {
                paths.push(path.clone());
                paths.len() - 1
            }
        };
        let mut reads = Vec::with_capacity(filters.len());
        let mut removes = Vec::with_capacity(filters.len());
        for f in &filters {
            reads.push(f.when.as_ref().and_then(Condition::path).map(&mut index_of));
            removes.push(match &f.action {
                Action::DropFields(fields) => fields.iter().map(&mut index_of).collect(),
                Action::Drop => Vec::new(),
            });
        }
        Ok(FilterSet {
            filters,
            paths,
            reads,
            removes,
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
    /// stored `body`. Conditions are tested on the event as stored (a
    /// `drop_fields` filter's `when` does not see an earlier filter's
    /// removals). The body is read only for paths the shape cannot rule out,
    /// once for all of them (conditions and fields to remove alike), and
    /// parsed whole only when a `drop_fields` filter has something to remove.
    /// With the body's `outline` (ingest has it), only the top-level values
    /// the paths start at are read.
    pub fn apply(&self, shape: &Shape, body: &str, outline: Option<&Outline>) -> FilterOutcome {
        if self.filters.is_empty() {
            return FilterOutcome::Send;
        }
        let mut values = Values {
            set: self,
            shape,
            body,
            outline,
            read: None,
        };
        let matches = |i: usize, f: &Filter, values: &mut Values<'_>| match &f.when {
            None => true,
            Some(c) => {
                let value = self.reads[i].and_then(|p| values.get(p));
                c.test(shape, value)
            }
        };
        for (i, f) in self.filters.iter().enumerate() {
            if f.action == Action::Drop && matches(i, f, &mut values) {
                return FilterOutcome::Drop(f.name.clone());
            }
        }
        let mut message: Option<Map<String, Value>> = None;
        let mut changed = false;
        for (i, f) in self.filters.iter().enumerate() {
            let Action::DropFields(paths) = &f.action else {
                continue;
            };
            let present = self.removes[i].iter().any(|&p| values.get(p).is_some());
            if !present || !matches(i, f, &mut values) {
                continue;
            }
            if message.is_none() {
                message = serde_json::from_str(body).ok();
            }
            let Some(m) = message.as_mut() else {
                return FilterOutcome::Send;
            };
            for p in paths {
                changed |= p.remove(m);
            }
        }
        match message
            .filter(|_| changed)
            .map(|m| serde_json::to_string(&m))
        {
            Some(Ok(text)) => FilterOutcome::SendBody(text),
            _ => FilterOutcome::Send,
        }
    }
}

/// The values at a set's paths for one event, read on first need.
struct Values<'a> {
    set: &'a FilterSet,
    shape: &'a Shape,
    body: &'a str,
    outline: Option<&'a Outline>,
    read: Option<Vec<Option<Value>>>,
}

impl Values<'_> {
    fn get(&mut self, path: usize) -> Option<&Value> {
        if self.read.is_none() {
            self.read = Some(self.load());
        }
        self.read.as_ref()?.get(path)?.as_ref()
    }

    /// Reads every path the shape does not rule out, in one pass; nothing
    /// (and no allocation) when the shape rules them all out.
    fn load(&self) -> Vec<Option<Value>> {
        let live: Vec<&PropertyPath> = self
            .set
            .paths
            .iter()
            .filter(|p| !p.absent_from(self.shape))
            .collect();
        if live.is_empty() {
            return Vec::new();
        }
        let mut got = read_paths(self.body, self.outline, &live).into_iter();
        self.set
            .paths
            .iter()
            .map(|p| {
                if p.absent_from(self.shape) {
                    None
                } else {
                    got.next().flatten()
                }
            })
            .collect()
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
mod tests;
