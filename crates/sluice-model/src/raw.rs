//! A call's top level, with every value kept as raw JSON text borrowed from
//! the request body.
//!
//! Why: enrichment reads and rewrites only a handful of top-level keys, yet
//! parsing each call into a `Map<String, Value>` (one allocation per key and
//! string) and serializing it again for storage was about half of the ingest
//! CPU time. A [`RawObject`] holds the keys in document order, each value as
//! borrowed `&RawValue` text until enrichment replaces it, and the stored body
//! is written by concatenation ([`RawObject::to_json`]).
//!
//! Duplicate keys behave as in `Map` with `preserve_order`: the key keeps its
//! first position and takes the last value.
//!
//! A raw scan checks JSON syntax but not everything a full parse refuses
//! (nesting beyond serde_json's recursion limit, numbers beyond `f64` range).
//! [`needs_full_parse`] spots text that might hold either, and the caller then
//! runs the full parse so such input is refused exactly as before.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Number, Value};

use crate::outline::Outline;

/// One top-level value: client text, a value the server set, or a nested
/// object opened one level (`context`).
#[derive(Debug, Clone)]
pub(crate) enum Slot<'a> {
    Raw(&'a RawValue),
    Owned(Value),
    Object(RawObject<'a>),
}

/// What enrichment needs to know about a small field.
pub(crate) enum Field<'s> {
    /// Absent or `null`.
    Null,
    Str(Cow<'s, str>),
    Num(Number),
    /// Any other JSON type.
    Other,
}

/// A JSON object's keys in document order, values as [`Slot`]s.
#[derive(Debug, Clone, Default)]
pub(crate) struct RawObject<'a> {
    entries: Vec<(Cow<'a, str>, Slot<'a>)>,
}

impl<'a> RawObject<'a> {
    fn position(&self, key: &str) -> Option<usize> {
        self.entries.iter().position(|(k, _)| k == key)
    }

    pub fn get(&self, key: &str) -> Option<&Slot<'a>> {
        self.position(key).map(|i| &self.entries[i].1)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.position(key).is_some()
    }

    /// Reads a field as [`Field`]; absent reads as [`Field::Null`].
    pub fn field(&self, key: &str) -> Field<'_> {
        self.get(key).map_or(Field::Null, Slot::field)
    }

    /// Like `Map::insert`: an existing key keeps its position, a new one is
    /// appended.
    pub fn insert(&mut self, key: impl Into<Cow<'a, str>>, slot: Slot<'a>) {
        let key = key.into();
        match self.position(&key) {
            Some(i) => self.entries[i].1 = slot,
            None => self.entries.push((key, slot)),
        }
    }

    /// Appends each key of `from` this object lacks (batch defaults under a
    /// call's own keys). Large objects compare keys through a set, so a big
    /// batch `context` costs linear, not quadratic, time per item.
    pub fn append_missing(&mut self, from: &'a Map<String, Value>) {
        let missing: Vec<(&'a String, &'a Value)> = if self.entries.len() * from.len() <= 256 {
            from.iter().filter(|(k, _)| !self.contains_key(k)).collect()
        } else {
            let own: HashSet<&str> = self.entries.iter().map(|(k, _)| k.as_ref()).collect();
            from.iter()
                .filter(|(k, _)| !own.contains(k.as_str()))
                .collect()
        };
        for (k, v) in missing {
            self.entries
                .push((Cow::Borrowed(k), Slot::Owned(v.clone())));
        }
    }

    pub fn insert_value(&mut self, key: &'static str, value: Value) {
        self.insert(key, Slot::Owned(value));
    }

    /// Removes a key, keeping the order of the others.
    pub fn shift_remove(&mut self, key: &str) -> Option<Slot<'a>> {
        self.position(key).map(|i| self.entries.remove(i).1)
    }

    /// Takes a slot out for rewriting; put it back with [`Self::insert`].
    pub fn slot_mut(&mut self, key: &str) -> Option<&mut Slot<'a>> {
        self.position(key).map(|i| &mut self.entries[i].1)
    }

    /// Keys with the JSON types of their values, in order (the shape of an
    /// opened object).
    pub fn fields(&self) -> Vec<(String, crate::shape::JsonType)> {
        use crate::shape::JsonType;
        self.entries
            .iter()
            .map(|(k, slot)| {
                let t = match slot {
                    Slot::Raw(raw) => JsonType::of_raw(raw.get()),
                    Slot::Owned(value) => JsonType::of_value(value),
                    Slot::Object(_) => JsonType::Object,
                };
                (k.to_string(), t)
            })
            .collect()
    }

    /// The object as compact JSON text; `size_hint` is the raw length.
    pub fn to_json(&self, size_hint: usize) -> String {
        let mut out = Vec::with_capacity(size_hint + 192);
        self.write(&mut out, None);
        text(out)
    }

    /// [`Self::to_json`], and where each top-level member went in it.
    pub fn to_json_outlined(&self, size_hint: usize) -> (String, Option<Outline>) {
        let mut out = Vec::with_capacity(size_hint + 192);
        let mut outline = Outline::with_capacity(self.entries.len());
        self.write(&mut out, Some(&mut outline));
        match String::from_utf8(out) {
            Ok(json) => (json, Some(outline)),
            Err(e) => (text(e.into_bytes()), None),
        }
    }

    fn write(&self, out: &mut Vec<u8>, mut outline: Option<&mut Outline>) {
        out.push(b'{');
        for (i, (key, slot)) in self.entries.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            let key_at = out.len();
            let escaped = write_key(key, out);
            let key_end = out.len();
            out.push(b':');
            match slot {
                Slot::Raw(raw) => out.extend_from_slice(raw.get().as_bytes()),
                Slot::Owned(value) => write_value(value, out),
                Slot::Object(object) => object.write(out, None),
            }
            if let Some(outline) = outline.as_deref_mut() {
                outline.push(key_at..key_end, escaped, key_end + 1..out.len());
            }
        }
        out.push(b'}');
    }

    /// Applies `Map` semantics to duplicate keys: first position, last value.
    fn dedup(&mut self) {
        let n = self.entries.len();
        let mut first_of: Vec<Option<usize>> = vec![None; n];
        let mut any = false;
        if n <= 24 {
            for (i, first) in first_of.iter_mut().enumerate().skip(1) {
                let key = &self.entries[i].0;
                if let Some(f) = self.entries[..i].iter().position(|(k, _)| k == key) {
                    *first = Some(f);
                    any = true;
                }
            }
        } else {
            let mut seen: HashMap<&str, usize> = HashMap::with_capacity(n);
            for (i, (key, _)) in self.entries.iter().enumerate() {
                if let Some(&f) = seen.get(key.as_ref()) {
                    first_of[i] = Some(f);
                    any = true;
                } else {
                    seen.insert(key.as_ref(), i);
                }
            }
        }
        if !any {
            return;
        }
        for (i, first) in first_of.iter().enumerate() {
            if let Some(f) = *first {
                let value = std::mem::replace(&mut self.entries[i].1, Slot::Owned(Value::Null));
                self.entries[f].1 = value;
            }
        }
        let mut index = 0;
        self.entries.retain(|_| {
            let keep = first_of[index].is_none();
            index += 1;
            keep
        });
    }
}

impl Slot<'_> {
    pub fn field(&self) -> Field<'_> {
        match self {
            Slot::Raw(raw) => raw_field(raw.get()),
            Slot::Owned(value) => value_field(Some(value)),
            Slot::Object(_) => Field::Other,
        }
    }
}

/// A parsed value (absent reads as `null`) as a [`Field`].
pub(crate) fn value_field(value: Option<&Value>) -> Field<'_> {
    match value {
        None | Some(Value::Null) => Field::Null,
        Some(Value::String(s)) => Field::Str(Cow::Borrowed(s)),
        Some(Value::Number(n)) => Field::Num(n.clone()),
        Some(_) => Field::Other,
    }
}

fn raw_field(text: &str) -> Field<'_> {
    let text = text.trim_start();
    match text.as_bytes().first() {
        Some(b'"') => match serde_json::from_str::<&str>(text) {
            Ok(s) => Field::Str(Cow::Borrowed(s)),
            Err(_) => serde_json::from_str::<String>(text)
                .map_or(Field::Other, |s| Field::Str(Cow::Owned(s))),
        },
        Some(b'n') => Field::Null,
        Some(b'-' | b'0'..=b'9') => serde_json::from_str(text).map_or(Field::Other, Field::Num),
        _ => Field::Other,
    }
}

/// Opens a slot holding an object one level: `Ok(None)` for absent or
/// `null`, `Err(())` for any other non-object.
pub(crate) fn open_object<'a>(slot: Option<Slot<'a>>) -> Result<Option<RawObject<'a>>, ()> {
    match slot {
        None | Some(Slot::Owned(Value::Null)) => Ok(None),
        Some(Slot::Object(object)) => Ok(Some(object)),
        Some(Slot::Owned(Value::Object(map))) => Ok(Some(RawObject {
            entries: map
                .into_iter()
                .map(|(k, v)| (Cow::Owned(k), Slot::Owned(v)))
                .collect(),
        })),
        Some(Slot::Owned(_)) => Err(()),
        Some(Slot::Raw(raw)) => match raw.get().trim_start().as_bytes().first() {
            Some(b'n') => Ok(None),
            Some(b'{') => serde_json::from_str(raw.get()).map(Some).map_err(|_| ()),
            _ => Err(()),
        },
    }
}

/// Parses a slot as a whole `Map` (small objects such as `integrations`).
pub(crate) fn slot_map(slot: &Slot<'_>) -> Option<Map<String, Value>> {
    match slot {
        Slot::Raw(raw) => serde_json::from_str(raw.get()).ok(),
        Slot::Owned(Value::Object(map)) => Some(map.clone()),
        Slot::Owned(_) => None,
        Slot::Object(object) => serde_json::from_str(&object.to_json(0)).ok(),
    }
}

/// Written JSON as a `String`: every piece is either text of a `&str` or
/// serde_json output, so the lossy path is a guard only.
fn text(out: Vec<u8>) -> String {
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into())
}

/// Writes `key` quoted; whether it needed escapes.
fn write_key(key: &str, out: &mut Vec<u8>) -> bool {
    if key.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push(b'"');
        out.extend_from_slice(key.as_bytes());
        out.push(b'"');
        false
    } else {
        write_value(&Value::String(key.to_owned()), out);
        true
    }
}

fn write_value(value: &Value, out: &mut Vec<u8>) {
    // Writing a `Value` into a `Vec` cannot fail.
    let _ = serde_json::to_writer(&mut *out, value);
}

/// Nesting at which the full parse is run to check the recursion limit
/// (serde_json refuses 128 levels); kept well below it.
const DEEP: usize = 100;
/// Digits in a row at which a number might be beyond `f64` range.
const LONG_NUMBER: usize = 300;

/// Whether `text` (valid JSON) might nest deeper than serde_json allows or
/// hold a number out of `f64` range (any exponent, or a very long number).
pub(crate) fn needs_full_parse(text: &[u8]) -> bool {
    let (mut depth, mut digits, mut prev, mut i) = (0usize, 0usize, 0u8, 0usize);
    while i < text.len() {
        let b = text[i];
        match b {
            b'"' => {
                i += 1;
                while i < text.len() && text[i] != b'"' {
                    i += if text[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'[' | b'{' => {
                depth += 1;
                if depth >= DEEP {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            b'0'..=b'9' => {
                digits += 1;
                if digits >= LONG_NUMBER {
                    return true;
                }
            }
            b'e' | b'E' if prev.is_ascii_digit() => return true,
            _ => {}
        }
        if !b.is_ascii_digit() {
            digits = 0;
        }
        prev = b;
        i += 1;
    }
    false
}

/// A stored or received JSON object's top level, read-only: the keys in
/// document order with their values as borrowed raw text, under
/// `RawObject`'s key rules (a repeated key keeps its first position and
/// takes its last value, as `JSON.parse` does). For readers that copy most
/// values through unchanged, such as the webhook renderer.
pub struct RawTop<'a>(RawObject<'a>);

impl<'a> RawTop<'a> {
    /// `None` when `text` is not a JSON object.
    pub fn parse(text: &'a str) -> Option<RawTop<'a>> {
        serde_json::from_str(text).ok().map(RawTop)
    }

    /// The raw value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&'a RawValue> {
        match self.0.get(key) {
            Some(Slot::Raw(raw)) => Some(raw),
            _ => None,
        }
    }

    /// Every key with its raw value, in document order.
    pub fn entries(&self) -> impl Iterator<Item = (&str, &'a RawValue)> + '_ {
        self.0.entries.iter().filter_map(|(k, slot)| match slot {
            Slot::Raw(raw) => Some((k.as_ref(), *raw)),
            _ => None,
        })
    }
}

impl<'de> Deserialize<'de> for RawObject<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectVisitor;
        impl<'de> Visitor<'de> for ObjectVisitor {
            type Value = RawObject<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut object = RawObject {
                    entries: Vec::with_capacity(map.size_hint().unwrap_or(16).min(64)),
                };
                while let Some(Key(key)) = map.next_key()? {
                    let value: &'de RawValue = map.next_value()?;
                    object.entries.push((key, Slot::Raw(value)));
                }
                object.dedup();
                Ok(object)
            }
        }
        deserializer.deserialize_map(ObjectVisitor)
    }
}

/// A key borrowed from the body unless it had escapes.
struct Key<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}
