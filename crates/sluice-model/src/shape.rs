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

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::EventType;
use crate::raw::{Field, RawObject, Slot};

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
    /// (identify, group), with their JSON types, in body order.
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
        Shape {
            kind,
            name,
            fields: fields.map(|k| k.0).unwrap_or_default(),
        }
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
    Shape {
        kind: event_type.as_str(),
        name,
        fields: object.map(slot_fields).unwrap_or_default(),
    }
}

fn slot_fields(slot: &Slot<'_>) -> Vec<(String, JsonType)> {
    match slot {
        Slot::Raw(raw) => raw_fields(raw),
        Slot::Owned(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| (k.clone(), JsonType::of_value(v)))
            .collect(),
        Slot::Owned(_) => Vec::new(),
        Slot::Object(object) => object.fields(),
    }
}

/// Top-level keys of a raw object with their types; empty for any other
/// value. The text was validated by the parse, so it is stepped through
/// with [`crate::scan`]: values are skipped, types come from their first
/// character.
fn raw_fields(raw: &RawValue) -> Vec<(String, JsonType)> {
    let Some(members) = crate::scan::members(raw.get()) else {
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

#[derive(Deserialize)]
struct Light {
    #[serde(rename = "type", default)]
    kind: Option<Str>,
    #[serde(default)]
    event: Option<Str>,
    #[serde(default)]
    name: Option<Str>,
    #[serde(default)]
    properties: Option<Keys>,
    #[serde(default)]
    traits: Option<Keys>,
}

/// A string, or nothing when the value is of another type.
struct Str(Option<String>);

/// Keys of an object with their types; empty when the value is not an object.
struct Keys(Vec<(String, JsonType)>);

impl<'de> Deserialize<'de> for Str {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let kind = d.deserialize_any(TypeVisitor)?;
        Ok(Str(kind.1))
    }
}

impl<'de> Deserialize<'de> for Keys {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(KeysVisitor)
    }
}

/// A value's type (and its text when it is a string); contents skipped.
struct Typed(JsonType, Option<String>);

impl<'de> Deserialize<'de> for Typed {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(TypeVisitor)
    }
}

struct TypeVisitor;

impl<'de> Visitor<'de> for TypeVisitor {
    type Value = Typed;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Typed, E> {
        Ok(Typed(JsonType::Null, None))
    }
    fn visit_none<E: de::Error>(self) -> Result<Typed, E> {
        Ok(Typed(JsonType::Null, None))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Typed, E> {
        Ok(Typed(JsonType::Boolean, None))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Typed, E> {
        Ok(Typed(JsonType::Number, None))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Typed, E> {
        Ok(Typed(JsonType::Number, None))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Typed, E> {
        Ok(Typed(JsonType::Number, None))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Typed, E> {
        Ok(Typed(JsonType::String, Some(v.to_owned())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Typed, E> {
        Ok(Typed(JsonType::String, Some(v)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Typed, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Typed(JsonType::Array, None))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Typed, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Typed(JsonType::Object, None))
    }
}

struct KeysVisitor;

impl<'de> Visitor<'de> for KeysVisitor {
    type Value = Keys;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Keys, A::Error> {
        let mut keys = Vec::new();
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            let Typed(t, _) = map.next_value()?;
            keys.push((key.into_owned(), t));
        }
        Ok(Keys(keys))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Keys, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Keys(Vec::new()))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Keys, E> {
        Ok(Keys(Vec::new()))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Keys, E> {
        Ok(Keys(Vec::new()))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Keys, E> {
        Ok(Keys(Vec::new()))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Keys, E> {
        Ok(Keys(Vec::new()))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Keys, E> {
        Ok(Keys(Vec::new()))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Keys, E> {
        Ok(Keys(Vec::new()))
    }
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
