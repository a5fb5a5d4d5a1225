//! What an event looks like to the source schema, its rules and filters:
//! its type, its name, and the top-level keys (with JSON types) of its
//! `properties` or `traits`.
//!
//! Ingest takes the shape while it parses the request
//! ([`crate::parse_request_with_shapes`]): the call's top level is already
//! split into raw values there, so only the `properties` or `traits` value is
//! read again, one level deep, and the rest of the body is not scanned a
//! second time. [`Shape::of`] reads a shape from stored JSON text instead
//! (tests, and events parsed without shapes): it skips every other value
//! without building it.

mod light;

use serde_json::Value;
use serde_json::value::RawValue;

use crate::EventType;
use crate::raw::{Field, RawObject, Slot};
use light::Light;

/// A JSON type, as a bit so that a set of types is one byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonType {
    Null = 1,
    Boolean = 2,
    Number = 4,
    String = 8,
    Array = 16,
    Object = 32,
}

impl JsonType {
    pub const ALL: [JsonType; 6] = [
        JsonType::Null,
        JsonType::Boolean,
        JsonType::Number,
        JsonType::String,
        JsonType::Array,
        JsonType::Object,
    ];

    pub fn bit(self) -> u8 {
        self as u8
    }

    pub fn name(self) -> &'static str {
        match self {
            JsonType::Null => "null",
            JsonType::Boolean => "boolean",
            JsonType::Number => "number",
            JsonType::String => "string",
            JsonType::Array => "array",
            JsonType::Object => "object",
        }
    }

    /// The type of a JSON value from its first character (the text is valid
    /// JSON, so the first character decides).
    pub fn of_raw(text: &str) -> JsonType {
        match text.trim_start().as_bytes().first() {
            Some(b'"') => JsonType::String,
            Some(b'{') => JsonType::Object,
            Some(b'[') => JsonType::Array,
            Some(b't' | b'f') => JsonType::Boolean,
            Some(b'n') | None => JsonType::Null,
            Some(_) => JsonType::Number,
        }
    }

    /// The type of a parsed value.
    pub fn of_value(value: &Value) -> JsonType {
        match value {
            Value::Null => JsonType::Null,
            Value::Bool(_) => JsonType::Boolean,
            Value::Number(_) => JsonType::Number,
            Value::String(_) => JsonType::String,
            Value::Array(_) => JsonType::Array,
            Value::Object(_) => JsonType::Object,
        }
    }

    /// The names of the types in a bit set, in a fixed order.
    pub fn names(mask: u8) -> Vec<&'static str> {
        Self::ALL
            .iter()
            .filter(|t| mask & t.bit() != 0)
            .map(|t| t.name())
            .collect()
    }
}

/// What one event looks like to the schema.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Shape {
    /// `type`: track, page, screen, identify, group, alias (empty when the
    /// body names no known type).
    pub kind: &'static str,
    /// The track event name, or the page or screen name.
    pub name: Option<String>,
    /// Top-level keys of `properties` (track, page, screen) or `traits`
    /// (identify, group), with their JSON types, in body order. An
    /// identify whose `traits` is absent or empty gives the keys of
    /// `context.traits` instead, where RudderStack's libraries put them:
    /// the traits the profile engine reads (and source rules block).
    pub fields: Vec<(String, JsonType)>,
}

impl Shape {
    /// Reads the shape of `body`. A body that does not parse gives a shape
    /// with only `fallback_kind` (ingest has validated it, so this is only
    /// a guard).
    pub fn of(body: &str, fallback_kind: &str) -> Shape {
        let fallback = static_kind(fallback_kind);
        let light: Light = match serde_json::from_str(body) {
            Ok(l) => l,
            Err(_) => {
                return Shape {
                    kind: fallback,
                    ..Shape::default()
                };
            }
        };
        let kind = light
            .kind
            .and_then(|k| k.0)
            .map_or(fallback, |k| static_kind(&k));
        let (name, fields) = match kind {
            "track" => (light.event.and_then(|e| e.0), light.properties),
            "page" | "screen" => (light.name.and_then(|n| n.0), light.properties),
            "identify" | "group" => (None, light.traits),
            _ => (None, None),
        };
        let mut fields = fields.map(|k| k.0).unwrap_or_default();
        if kind == "identify" && fields.is_empty() {
            fields = light.context.and_then(|c| c.0).unwrap_or_default();
        }
        Shape { kind, name, fields }
    }
}

/// The shape of a call being enriched, read from its top level: the name
/// from `event` or `name`, the keys of `properties` or `traits` by reading
/// that one value a level deep (its values are skipped, types come from
/// their first character).
pub(crate) fn of_call(call: &RawObject<'_>, event_type: EventType) -> Shape {
    let string = |key: &str| match call.field(key) {
        Field::Str(s) => Some(s.into_owned()),
        _ => None,
    };
    let (name, object) = match event_type {
        EventType::Track => (string("event"), call.get("properties")),
        EventType::Page | EventType::Screen => (string("name"), call.get("properties")),
        EventType::Identify | EventType::Group => (None, call.get("traits")),
        EventType::Alias => (None, None),
    };
    let mut fields = object.map(slot_fields).unwrap_or_default();
    if event_type == EventType::Identify && fields.is_empty() {
        fields = call.get("context").map(context_traits).unwrap_or_default();
    }
    Shape {
        kind: event_type.as_str(),
        name,
        fields,
    }
}

/// The keys of `context.traits` (empty when either is not an object).
fn context_traits(context: &Slot<'_>) -> Vec<(String, JsonType)> {
    match context {
        Slot::Raw(raw) => crate::scan::members(raw.get())
            .and_then(|mut members| {
                members.find_map(|m| match m {
                    Ok((key, value)) if key == "traits" => Some(text_fields(value)),
                    _ => None,
                })
            })
            .unwrap_or_default(),
        Slot::Owned(Value::Object(map)) => map.get("traits").map(value_fields).unwrap_or_default(),
        Slot::Owned(_) => Vec::new(),
        Slot::Object(object) => object.get("traits").map(slot_fields).unwrap_or_default(),
    }
}

fn slot_fields(slot: &Slot<'_>) -> Vec<(String, JsonType)> {
    match slot {
        Slot::Raw(raw) => raw_fields(raw),
        Slot::Owned(value) => value_fields(value),
        Slot::Object(object) => object.fields(),
    }
}

/// Top-level keys of a parsed object with their types; empty for any
/// other value.
fn value_fields(value: &Value) -> Vec<(String, JsonType)> {
    match value {
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| (k.clone(), JsonType::of_value(v)))
            .collect(),
        _ => Vec::new(),
    }
}

/// Top-level keys of a raw object with their types; empty for any other
/// value. The text was validated by the parse, so it is stepped through
/// with [`crate::scan`]: values are skipped, types come from their first
/// character.
fn raw_fields(raw: &RawValue) -> Vec<(String, JsonType)> {
    text_fields(raw.get())
}

/// [`raw_fields`] of validated JSON text.
fn text_fields(text: &str) -> Vec<(String, JsonType)> {
    let Some(members) = crate::scan::members(text) else {
        return Vec::new();
    };
    let mut fields = Vec::with_capacity(8);
    for member in members {
        match member {
            Ok((key, value)) => fields.push((key.into_owned(), JsonType::of_raw(value))),
            Err(_) => return Vec::new(),
        }
    }
    fields
}

/// The `&'static` name of a call type; empty for an unknown one.
fn static_kind(name: &str) -> &'static str {
    EventType::from_name(name).map_or("", EventType::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn track_shape_has_event_name_and_property_types() {
        let s = Shape::of(
            r#"{"type":"track","event":"Order Completed","properties":{"total":9.5,"sku":"a","items":[1],"meta":{"x":1},"gift":false,"coupon":null},"context":{"ip":"1.2.3.4"}}"#,
            "track",
        );
        assert_eq!(s.kind, "track");
        assert_eq!(s.name.as_deref(), Some("Order Completed"));
        let types: Vec<_> = s
            .fields
            .iter()
            .map(|(k, t)| (k.as_str(), t.name()))
            .collect();
        assert_eq!(
            types,
            [
                ("total", "number"),
                ("sku", "string"),
                ("items", "array"),
                ("meta", "object"),
                ("gift", "boolean"),
                ("coupon", "null")
            ]
        );
    }

    #[test]
    fn identify_shape_lists_trait_keys() {
        let s = Shape::of(
            r#"{"type":"identify","traits":{"email":"a@b","age":3}}"#,
            "identify",
        );
        assert_eq!(s.name, None);
        assert_eq!(s.fields.len(), 2);
        assert_eq!(s.fields[0].0, "email");
    }

    #[test]
    fn identify_without_traits_lists_context_traits_keys() {
        let body = r#"{"type":"identify","traits":{},"context":{"ip":"1.2.3.4","traits":{"ssn":"1","plan":"pro"}}}"#;
        let keys = |s: Shape| s.fields.into_iter().map(|(k, _)| k).collect::<Vec<_>>();
        assert_eq!(keys(Shape::of(body, "identify")), ["ssn", "plan"]);
        let own = r#"{"type":"identify","traits":{"a":1},"context":{"traits":{"ssn":"1"}}}"#;
        assert_eq!(keys(Shape::of(own, "identify")), ["a"]);
        let group = r#"{"type":"group","context":{"traits":{"ssn":"1"}}}"#;
        assert!(Shape::of(group, "group").fields.is_empty());
        let odd = r#"{"type":"identify","context":"x"}"#;
        assert!(Shape::of(odd, "identify").fields.is_empty());
    }

    #[test]
    fn page_name_is_read_and_non_string_names_are_ignored() {
        let s = Shape::of(r#"{"type":"page","name":"Home","properties":{}}"#, "page");
        assert_eq!(s.name.as_deref(), Some("Home"));
        let s = Shape::of(r#"{"type":"page","name":null,"properties":[]}"#, "page");
        assert_eq!(s.name, None);
        assert!(s.fields.is_empty());
    }

    #[test]
    fn unparseable_body_falls_back_to_the_given_kind() {
        let s = Shape::of("{", "track");
        assert_eq!(s.kind, "track");
        assert!(s.name.is_none());
    }

    #[test]
    fn type_names_come_from_the_bit_set() {
        let mask = JsonType::String.bit() | JsonType::Number.bit();
        assert_eq!(JsonType::names(mask), ["number", "string"]);
    }
}
