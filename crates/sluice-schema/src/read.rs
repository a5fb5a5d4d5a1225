//! Reading the values at a few property paths from JSON text, in one pass.
//!
//! Why: a filter condition on `properties.total` needs one value, yet
//! parsing the whole message into a `Map` to get it allocates every key and
//! string of the event. [`read_paths`] walks the text once, builds only the
//! values at the paths asked for, and skips everything else without
//! building it.
//!
//! Duplicate keys behave as in a parsed `Map`: the last value wins.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::path::PropertyPath;

/// The value at each of `paths` in `body` (`None` where a path is missing,
/// passes through a non-object, or the text does not parse), in order.
pub fn read_paths(body: &str, paths: &[&PropertyPath]) -> Vec<Option<Value>> {
    let mut out = vec![None; paths.len()];
    if paths.is_empty() {
        return out;
    }
    let segments: Vec<&[String]> = paths.iter().map(|p| p.segments()).collect();
    let walker = Walker {
        paths: &segments,
        depth: 0,
        active: (0..paths.len()).collect(),
        out: &mut out,
    };
    let mut de = serde_json::Deserializer::from_str(body);
    if walker.deserialize(&mut de).is_err() {
        return vec![None; paths.len()];
    }
    out
}

/// Walks one value at `depth`, for the paths in `active` that lead through it.
struct Walker<'s> {
    paths: &'s [&'s [String]],
    depth: usize,
    active: Vec<usize>,
    out: &'s mut Vec<Option<Value>>,
}

impl<'de> DeserializeSeed<'de> for Walker<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walker<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut matched: Vec<usize> = Vec::new();
        while let Some(Key(key)) = map.next_key()? {
            matched.clear();
            matched.extend(
                self.active
                    .iter()
                    .copied()
                    .filter(|&i| self.paths[i][self.depth] == key.as_ref()),
            );
            if matched.is_empty() {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            // A repeated key replaces what an earlier one gave.
            for &i in &matched {
                self.out[i] = None;
            }
            let ends_here = matched
                .iter()
                .any(|&i| self.paths[i].len() == self.depth + 1);
            if ends_here {
                // Some path ends at this key: build the value and read the
                // longer paths, if any, from it.
                let value: Value = map.next_value()?;
                for &i in &matched {
                    let rest = &self.paths[i][self.depth + 1..];
                    self.out[i] = rest
                        .iter()
                        .try_fold(&value, |at, k| at.as_object()?.get(k))
                        .cloned();
                }
            } else {
                map.next_value_seed(Walker {
                    paths: self.paths,
                    depth: self.depth + 1,
                    active: matched.clone(),
                    out: &mut *self.out,
                })?;
            }
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
}

/// A key, borrowed from the text unless it had escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn path(p: &str) -> PropertyPath {
        PropertyPath::parse(p, "f").unwrap()
    }

    #[test]
    fn reads_several_paths_in_one_pass_and_misses_absent_ones() {
        let body = r#"{"type":"track","properties":{"total":9.5,"plan":{"tier":"pro"},"tags":["a"]},"context":{"ip":"1.2.3.4"}}"#;
        let (a, b, c, d, e) = (
            path("properties.total"),
            path("properties.plan.tier"),
            path("properties.plan"),
            path("context.ip.x"),
            path("properties.none"),
        );
        let got = read_paths(body, &[&a, &b, &c, &d, &e]);
        assert_eq!(
            got,
            [
                Some(json!(9.5)),
                Some(json!("pro")),
                Some(json!({"tier": "pro"})),
                None,
                None
            ]
        );
    }

    #[test]
    fn agrees_with_reading_a_parsed_map() {
        let body = r#"{"properties":{"a":1,"a":{"b":2},"s":"x\"y"},"p\u0072operties":{"c":3}}"#;
        let map: serde_json::Map<String, Value> = serde_json::from_str(body).unwrap();
        for p in [
            "properties.a.b",
            "properties.a",
            "properties.s",
            "properties.c",
        ] {
            let p = path(p);
            assert_eq!(read_paths(body, &[&p])[0].as_ref(), p.get(&map), "{p}");
        }
    }

    #[test]
    fn unparseable_text_reads_nothing() {
        let p = path("properties.a");
        assert_eq!(read_paths("{\"properties\":{\"a\":1", &[&p]), [None]);
    }
}
