//! What definitions read of an event's properties, so that a loaded event
//! keeps only that (pure).
//!
//! An event's `properties` can be large (a cart with its products) while
//! definitions read a handful of paths. A profile evaluated for the live
//! definitions therefore parses only the top-level properties some
//! definition's path starts with; the rest of the text is skipped without
//! building a value. Memory per loaded event drops from the whole parsed
//! object to those few values, which bounds the engine's memory in steps,
//! sweeps and jobs of thousands of profiles.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::definition::{Condition, Definition};
use crate::filter::Filter;

/// Top-level property keys the definitions' paths can reach, as
/// [`crate::filter::lookup`] resolves them: a path `a.b` is tried as the key
/// `a.b`, then as `a` then `b`; so both `a.b` and `a` are kept.
pub fn property_roots<'a>(defs: impl IntoIterator<Item = &'a Definition>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for d in defs {
        match d {
            Definition::Trait(t) => {
                t.property.iter().for_each(|p| add(p, &mut out));
                filters(&t.filters, &mut out);
            }
            Definition::Audience(a) => condition(&a.condition, &mut out),
        }
    }
    out
}

fn add(path: &str, out: &mut BTreeSet<String>) {
    out.insert(path.to_owned());
    if let Some((first, _)) = path.split_once('.') {
        out.insert(first.to_owned());
    }
}

fn filters(fs: &[Filter], out: &mut BTreeSet<String>) {
    fs.iter().for_each(|f| add(&f.property, out));
}

fn condition(c: &Condition, out: &mut BTreeSet<String>) {
    match c {
        Condition::And(items) | Condition::Or(items) => {
            items.iter().for_each(|i| condition(i, out));
        }
        Condition::Not(inner) => condition(inner, out),
        Condition::Performed(p) | Condition::NotPerformed(p) => filters(&p.filters, out),
        Condition::Trait(_) | Condition::ComputedTrait(_) | Condition::Audience(_) => {}
    }
}

/// Parses a properties object keeping only `roots` (all of it when `None`);
/// text that is not an object reads as none.
pub fn properties(text: &str, roots: Option<&BTreeSet<String>>) -> Map<String, Value> {
    let Some(roots) = roots else {
        return serde_json::from_str(text).unwrap_or_default();
    };
    let mut out = Map::new();
    if roots.is_empty() {
        return out;
    }
    let Ok(top) = serde_json::from_str::<HashMap<Cow<'_, str>, &RawValue>>(text) else {
        return out;
    };
    for (k, raw) in top {
        if roots.contains(k.as_ref())
            && let Ok(v) = serde_json::from_str::<Value>(raw.get())
        {
            out.insert(k.into_owned(), v);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn def(class: &str, v: Value) -> Definition {
        Definition::parse(class, &v).expect("valid")
    }

    #[test]
    fn roots_cover_every_path_a_definition_reads() {
        let defs = [
            def(
                "trait",
                json!({"kind": "sum", "event": "E", "property": "cart.total",
                       "where": [{"property": "currency", "op": "equals", "value": "USD"}]}),
            ),
            def(
                "audience",
                json!({"condition": {"and": [
                    {"not": {"performed": {"event": "F",
                        "where": [{"property": "plan", "op": "exists"}]}}},
                    {"trait": {"key": "age", "op": "gt", "value": 3}}]}}),
            ),
        ];
        let roots = property_roots(&defs);
        let want: BTreeSet<String> = ["cart", "cart.total", "currency", "plan"]
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(roots, want, "trait conditions read traits, not properties");
    }

    #[test]
    fn only_the_roots_are_kept_and_lookups_still_find_them() {
        let text = r#"{"cart":{"total":5},"cart.total":7,"big":[1,2,3],"currency":"USD"}"#;
        let roots: BTreeSet<String> = ["cart", "cart.total"]
            .into_iter()
            .map(String::from)
            .collect();
        let kept = properties(text, Some(&roots));
        assert_eq!(kept.len(), 2);
        assert_eq!(crate::filter::lookup(&kept, "cart.total"), Some(&json!(7)));
        assert_eq!(properties(text, None).len(), 4, "everything without roots");
        assert!(properties(text, Some(&BTreeSet::new())).is_empty());
        assert!(properties("[1]", Some(&roots)).is_empty(), "not an object");
    }
}
