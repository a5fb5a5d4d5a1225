//! Reading a shape from stored JSON text without building its values:
//! serde visitors that note a value's type and skip its contents.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::JsonType;

#[derive(Deserialize)]
pub(super) struct Light {
    #[serde(rename = "type", default)]
    pub(super) kind: Option<Str>,
    #[serde(default)]
    pub(super) event: Option<Str>,
    #[serde(default)]
    pub(super) name: Option<Str>,
    #[serde(default)]
    pub(super) properties: Option<Keys>,
    #[serde(default)]
    pub(super) traits: Option<Keys>,
    #[serde(default)]
    pub(super) context: Option<ContextTraits>,
}

/// The keys of `context.traits`, when `context` is an object that has it.
pub(super) struct ContextTraits(pub(super) Option<Vec<(String, JsonType)>>);

impl<'de> Deserialize<'de> for ContextTraits {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ContextVisitor)
    }
}

/// A string, or nothing when the value is of another type.
pub(super) struct Str(pub(super) Option<String>);

/// Keys of an object with their types; empty when the value is not an object.
pub(super) struct Keys(pub(super) Vec<(String, JsonType)>);

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

struct ContextVisitor;

impl<'de> Visitor<'de> for ContextVisitor {
    type Value = ContextTraits;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ContextTraits, A::Error> {
        let mut traits = None;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == "traits" {
                let Keys(keys) = map.next_value()?;
                traits = Some(keys);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(ContextTraits(traits))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ContextTraits, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(ContextTraits(None))
    }
    fn visit_unit<E: de::Error>(self) -> Result<ContextTraits, E> {
        Ok(ContextTraits(None))
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<ContextTraits, E> {
        Ok(ContextTraits(None))
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<ContextTraits, E> {
        Ok(ContextTraits(None))
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<ContextTraits, E> {
        Ok(ContextTraits(None))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<ContextTraits, E> {
        Ok(ContextTraits(None))
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<ContextTraits, E> {
        Ok(ContextTraits(None))
    }
}
