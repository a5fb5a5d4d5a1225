//! Reading the values at a few property paths from JSON text, in one pass.
//!
//! Why: a filter condition on `properties.total` needs one value, yet
//! parsing the whole message into a `Map` to get it allocates every key and
//! string of the event. [`read_paths`] steps through the text once with
//! [`sluice_model::scan`], parses only the values at the paths asked for,
//! and skips the rest without tokenizing it. Given the message's
//! [`Outline`], it does not even step through the rest: the outline says
//! where each top-level value is. The text is a stored message, so valid
//! JSON (see [`sluice_model::scan`] for what is and is not checked).
//!
//! Duplicate keys behave as in a parsed `Map`: the last value wins.

use serde_json::Value;
use sluice_model::Outline;
use sluice_model::scan::{Malformed, members};

use crate::path::PropertyPath;

/// The value at each of `paths` in `body` (`None` where a path is missing,
/// passes through a non-object, or the text does not parse), in order.
///
/// With the body's `outline`, each path's first key is looked up there and
/// only that member's value is read: the rest of the message is not scanned
/// at all, and a path whose first key the message lacks costs no read.
pub fn read_paths(
    body: &str,
    outline: Option<&Outline>,
    paths: &[&PropertyPath],
) -> Vec<Option<Value>> {
    let mut out = vec![None; paths.len()];
    if paths.is_empty() {
        return out;
    }
    let read = match outline {
        Some(outline) => read_outlined(body, outline, paths, &mut out),
        None => {
            let active: Vec<usize> = (0..paths.len()).collect();
            walk(body, 0, paths, &active, &mut out)
        }
    };
    if read.is_err() {
        return vec![None; paths.len()];
    }
    out
}

/// Reads the paths under each top-level key from that key's value alone.
fn read_outlined(
    body: &str,
    outline: &Outline,
    paths: &[&PropertyPath],
    out: &mut [Option<Value>],
) -> Result<(), Malformed> {
    let top = |i: usize| paths[i].segments()[0].as_str();
    let mut active: Vec<usize> = Vec::with_capacity(paths.len());
    for first in 0..paths.len() {
        if (0..first).any(|i| top(i) == top(first)) {
            continue; // read with the first path under this key
        }
        let Some(text) = outline.value(body, top(first)) else {
            continue;
        };
        active.clear();
        active.extend((first..paths.len()).filter(|&i| top(i) == top(first)));
        read_member(text, 1, paths, &active, out)?;
    }
    Ok(())
}

/// Reads, from the object `text`, the paths in `active` that lead through
/// it; its keys are their segment `depth`. A value that is not an object
/// holds none of them.
fn walk(
    text: &str,
    depth: usize,
    paths: &[&PropertyPath],
    active: &[usize],
    out: &mut [Option<Value>],
) -> Result<(), Malformed> {
    let Some(object) = members(text) else {
        return Ok(());
    };
    let mut matched: Vec<usize> = Vec::new();
    for member in object {
        let (key, value) = member?;
        matched.clear();
        matched.extend(
            active
                .iter()
                .copied()
                .filter(|&i| paths[i].segments()[depth] == key.as_ref()),
        );
        if !matched.is_empty() {
            read_member(value, depth + 1, paths, &matched, out)?;
        }
    }
    Ok(())
}

/// Reads the paths in `active`, whose first `depth` segments lead to the
/// value `text`: those that end there take it (parsed once), the longer ones
/// are read from inside it. Whatever an earlier member of the same key
/// gave them is replaced.
fn read_member(
    text: &str,
    depth: usize,
    paths: &[&PropertyPath],
    active: &[usize],
    out: &mut [Option<Value>],
) -> Result<(), Malformed> {
    let mut value: Option<Value> = None;
    let mut longer = false;
    for &i in active {
        out[i] = None;
        if paths[i].segments().len() == depth {
            if value.is_none() {
                value = Some(serde_json::from_str(text).map_err(|_| Malformed)?);
            }
            out[i] = value.clone();
        } else {
            longer = true;
        }
    }
    if longer {
        let deeper: Vec<usize> = active
            .iter()
            .copied()
            .filter(|&i| paths[i].segments().len() > depth)
            .collect();
        walk(text, depth, paths, &deeper, out)?;
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
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
        let got = read_paths(body, None, &[&a, &b, &c, &d, &e]);
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
            assert_eq!(
                read_paths(body, None, &[&p])[0].as_ref(),
                p.get(&map),
                "{p}"
            );
        }
    }

    #[test]
    fn unparseable_text_reads_nothing() {
        let p = path("properties.a");
        assert_eq!(read_paths("{\"properties\":{\"a\":1", None, &[&p]), [None]);
    }

    /// A track call as ingest stores it, with its outline.
    pub(crate) fn stored(call: &str) -> (String, Outline) {
        let ctx = sluice_model::RequestContext {
            received_at: chrono::Utc::now(),
            client_ip: None,
        };
        let envelope = sluice_model::parse_request_with_shapes(
            sluice_model::Endpoint::Single(sluice_model::EventType::Track),
            call.as_bytes(),
            &ctx,
            &sluice_model::Limits::default(),
        )
        .unwrap();
        let event = envelope.events.into_iter().next().unwrap();
        (event.json, event.outline.unwrap())
    }

    #[test]
    fn reading_through_the_outline_agrees_with_reading_the_text() {
        let calls = [
            r#"{"userId":"u","event":"E","properties":{"a":1,"a":{"b":2},"s":"x\"y","n":null},"context":{"ip":"1.2.3.4","traits":{"t":1}}}"#,
            r#"{"userId":"u","event":"E","properties":[1,2],"traits":{"ssn":"x"}}"#,
            r#"{"userId":"u","event":"E","properties":{"plan":{"tier":"pro","seats":3}},"properties":{"plan":{"tier":"team"}}}"#,
            r#"{"userId":"u","event":"E"}"#,
        ];
        let paths = [
            "properties.a.b",
            "properties.a",
            "properties.s",
            "properties.n",
            "properties.plan.tier",
            "properties.plan",
            "properties",
            "traits.ssn",
            "context.traits.t",
            "context.ip.x",
            "event",
            "nothing.here",
        ]
        .map(path);
        let refs: Vec<&PropertyPath> = paths.iter().collect();
        for call in calls {
            let (body, outline) = stored(call);
            let plain = read_paths(&body, None, &refs);
            assert_eq!(read_paths(&body, Some(&outline), &refs), plain, "{body}");
            assert!(plain.iter().any(Option::is_some), "{body}");
            // One path at a time, in another order, agrees too.
            for p in refs.iter().rev() {
                assert_eq!(
                    read_paths(&body, Some(&outline), &[p]),
                    read_paths(&body, None, &[p]),
                    "{p} in {body}"
                );
            }
        }
    }
}
