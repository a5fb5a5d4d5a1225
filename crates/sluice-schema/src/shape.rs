//! The cheap look at a stored event body that the schema and the rules need.
//!
//! The body is JSON text written by ingest. [`Shape::of`] reads only the
//! top-level `type`, `event`, `name`, and the keys (with JSON types) of
//! `properties` and `traits`; every other value is skipped without being
//! built, so the cost stays far below a full parse.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

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
    /// `type`: track, page, screen, identify, group, alias.
    pub kind: String,
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
        let light: Light = match serde_json::from_str(body) {
            Ok(l) => l,
            Err(_) => {
                return Shape {
                    kind: fallback_kind.to_owned(),
                    ..Shape::default()
                };
            }
        };
        let kind = light
            .kind
            .and_then(|k| k.0)
            .unwrap_or_else(|| fallback_kind.to_owned());
        let (name, fields) = match kind.as_str() {
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
