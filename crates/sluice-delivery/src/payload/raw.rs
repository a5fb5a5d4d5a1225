//! The message of a stored event without a parse tree.
//!
//! Why: [`super::build`] parses the whole stored body into a
//! `serde_json::Value` and renders it again; on a backlog drain that parse
//! was the largest single cost of the delivery workers after the socket
//! writes. Here only the top level is split, into keys and borrowed raw
//! values; each value that is already in `JSON.stringify` form
//! ([`is_fixed_point`]) is copied as it is, and any other value is parsed
//! and rendered on its own. The key order and the key rules are
//! [`super::build`]'s, and the bytes are the same (a property test in
//! `tests.rs` holds the two paths to that).
//!
//! [`render`] covers track, identify, group, screen and alias events and
//! answers `None` for everything else, which the full path then handles,
//! errors included: page events (their properties merge `context.page`),
//! delete notifications, bodies that are not an object with a string
//! `type`, and bodies with a top-level key JavaScript would move to the
//! front (an array index) or that could collide with a key the builder
//! writes (`Previous ID`, `User ID`).
//!
//! The top level is split by [`RawTop`], ingest's own raw reader, so a
//! repeated key is resolved the same way on both sides.

use serde_json::Value;
use serde_json::value::RawValue;
use sluice_model::RawTop;
use sluice_signing::json::{is_array_index, is_fixed_point, write_js_json, write_js_string};

use super::{KNOWN, NEVER_FORWARDED, Own, TIMES, own_fields};

/// Renders the message for `event_body`, or `None` when the full path must.
pub(super) fn render(event_body: &str) -> Option<Vec<u8>> {
    let top = RawTop::parse(event_body)?;
    let get = |key: &str| top.get(key);
    let kind: String = serde_json::from_str(get("type")?.get()).ok()?;
    let fields = own_fields(&kind)?;
    let others = || {
        top.entries()
            .filter(|(k, _)| !KNOWN.contains(k) && !NEVER_FORWARDED.contains(k))
    };
    if others().any(|(k, _)| is_array_index(k) || k == "Previous ID" || k == "User ID") {
        return None;
    }

    let mut w = Writer {
        out: Vec::with_capacity(event_body.len() + 64),
        first: true,
    };
    w.out.push(b'{');
    w.text("version", "1");
    w.key("type");
    write_js_string(&kind, &mut w.out);
    w.moved("messageId", get("messageId"))?;
    if kind == "alias" {
        w.moved("anonymousId", get("anonymousId"))?;
        w.moved("Previous ID", get("previousId"))?;
        w.moved("User ID", get("userId"))?;
    } else {
        match get("userId") {
            Some(raw) => w.value("userId", raw)?,
            None => w.text("userId", "null"),
        }
        w.moved("anonymousId", get("anonymousId"))?;
    }
    for field in fields {
        match *field {
            Own::Moved(key) => w.moved(key, get(key))?,
            Own::Object(key) => w.object(key, get(key))?,
        }
    }
    for (key, raw) in others() {
        w.value(key, raw)?;
    }
    w.object("context", get("context"))?;
    w.moved("integrations", get("integrations"))?;
    for key in TIMES {
        w.moved(key, get(key))?;
    }
    w.out.push(b'}');
    Some(w.out)
}

/// Appends members to an object being written.
struct Writer {
    out: Vec<u8>,
    first: bool,
}

impl Writer {
    fn key(&mut self, key: &str) {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        write_js_string(key, &mut self.out);
        self.out.push(b':');
    }

    /// A member whose value is literal text already in final form.
    fn text(&mut self, key: &str, text: &str) {
        self.key(key);
        self.out.extend_from_slice(text.as_bytes());
    }

    /// A member with a client's value, copied when already in final form.
    fn value(&mut self, key: &str, raw: &RawValue) -> Option<()> {
        self.key(key);
        let text = raw.get();
        if is_fixed_point(text) {
            self.out.extend_from_slice(text.as_bytes());
        } else {
            let value: Value = serde_json::from_str(text).ok()?;
            write_js_json(&value, &mut self.out);
        }
        Some(())
    }

    /// A key moved over only when present and not `null`.
    fn moved(&mut self, key: &str, raw: Option<&RawValue>) -> Option<()> {
        match raw {
            Some(raw) if !is_null(raw) => self.value(key, raw),
            _ => Some(()),
        }
    }

    /// An object-valued key; a missing, null or non-object value is `{}`.
    fn object(&mut self, key: &str, raw: Option<&RawValue>) -> Option<()> {
        match raw {
            Some(raw) if raw.get().trim_start().starts_with('{') => self.value(key, raw),
            _ => {
                self.text(key, "{}");
                Some(())
            }
        }
    }
}

fn is_null(raw: &RawValue) -> bool {
    raw.get().trim() == "null"
}
