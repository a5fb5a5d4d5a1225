//! Webhook bodies: one JSON message per POST, in the shapes
//! docs/webhook-payloads.md describes.
//!
//! The body is built from the stored (already validated and enriched) event
//! and rendered with [`sluice_signing::json`], so the bytes on the wire equal
//! `JSON.stringify(JSON.parse(body))` and receivers that verify the signature
//! over a re-serialized body agree with us. Key order is fixed (see
//! `docs/webhook-payloads.md`):
//!
//! `version, type, messageId, userId, anonymousId, <type fields>, <other keys>,
//! context, integrations, timestamp, originalTimestamp, sentAt, receivedAt`.

mod raw;

use serde_json::{Map, Value};

use crate::error::DeliveryError;

/// Keys placed by the builder itself; anything else in the stored event is
/// carried along after the type-specific fields, in its stored order.
const KNOWN: &[&str] = &[
    "version",
    "type",
    "messageId",
    "userId",
    "anonymousId",
    "previousId",
    "event",
    "name",
    "category",
    "properties",
    "traits",
    "groupId",
    "context",
    "integrations",
    "timestamp",
    "originalTimestamp",
    "sentAt",
    "receivedAt",
];

/// Keys never forwarded: credentials a client may have put in the body.
const NEVER_FORWARDED: &[&str] = &["writeKey"];

/// The page properties Segment documents, placed first in this order.
const PAGE_KEYS: [&str; 4] = ["path", "referrer", "title", "url"];

/// The exact bytes sent and signed for a stored event body (JSON text):
/// `render(&build(event_body)?)`, usually without building the message as
/// a tree (see `raw.rs`).
pub fn render_event(event_body: &str) -> Result<Vec<u8>, DeliveryError> {
    match raw::render(event_body) {
        Some(body) => Ok(body),
        None => build(event_body).map(|message| render(&message)),
    }
}

/// Builds the webhook message for a stored event body (JSON text).
pub fn build(event_body: &str) -> Result<Value, DeliveryError> {
    let parsed: Value = serde_json::from_str(event_body)
        .map_err(|e| DeliveryError::Payload(format!("stored body is not JSON: {e}")))?;
    let Value::Object(mut src) = parsed else {
        return Err(DeliveryError::Payload(
            "stored body is not an object".into(),
        ));
    };
    let kind = match src.get("type") {
        Some(Value::String(t)) => t.clone(),
        _ => return Err(DeliveryError::Payload("stored body has no type".into())),
    };
    if kind == "delete" {
        let user_id = src
            .get("userId")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let timestamp = src
            .get("timestamp")
            .and_then(Value::as_str)
            .unwrap_or_default();
        return Ok(delete_message(user_id, timestamp));
    }

    let mut out = Map::new();
    out.insert("version".into(), Value::from(1));
    out.insert("type".into(), Value::String(kind.clone()));
    move_key(&mut src, &mut out, "messageId");
    if kind == "alias" {
        // Segment's webhook names the two identities with literal, spaced keys.
        move_key(&mut src, &mut out, "anonymousId");
        move_as(&mut src, &mut out, "previousId", "Previous ID");
        move_as(&mut src, &mut out, "userId", "User ID");
    } else {
        let user_id = src.shift_remove("userId").unwrap_or(Value::Null);
        out.insert("userId".into(), user_id);
        move_key(&mut src, &mut out, "anonymousId");
    }
    if kind == "page" {
        move_key(&mut src, &mut out, "name");
        move_key(&mut src, &mut out, "category");
        let page_context = src
            .get("context")
            .and_then(|c| c.get("page"))
            .and_then(Value::as_object)
            .cloned();
        let props = take_object(&mut src, "properties");
        out.insert(
            "properties".into(),
            Value::Object(page_properties(props, page_context.as_ref())),
        );
    } else {
        let Some(fields) = own_fields(&kind) else {
            return Err(DeliveryError::Payload(format!("unknown type {kind:?}")));
        };
        for field in fields {
            match *field {
                Own::Moved(key) => move_key(&mut src, &mut out, key),
                Own::Object(key) => {
                    out.insert(key.into(), Value::Object(take_object(&mut src, key)));
                }
            }
        }
    }
    for (key, value) in &src {
        if !KNOWN.contains(&key.as_str()) && !NEVER_FORWARDED.contains(&key.as_str()) {
            out.insert(key.clone(), value.clone());
        }
    }
    out.insert(
        "context".into(),
        Value::Object(take_object(&mut src, "context")),
    );
    move_key(&mut src, &mut out, "integrations");
    for key in TIMES {
        move_key(&mut src, &mut out, key);
    }
    Ok(Value::Object(out))
}

/// The times that close every message, in this order.
const TIMES: [&str; 4] = ["timestamp", "originalTimestamp", "sentAt", "receivedAt"];

/// How one of a type's own fields reaches the message.
#[derive(Debug, Clone, Copy)]
enum Own {
    /// Moved over when present and not `null`.
    Moved(&'static str),
    /// Always present: a missing, null or non-object value becomes `{}`.
    Object(&'static str),
}

/// The type's own fields in message order, for every type but `page`
/// (whose properties merge `context.page`) and `delete`; `None` for those
/// and unknown types. Both renderers (here and `raw.rs`) follow it.
fn own_fields(kind: &str) -> Option<&'static [Own]> {
    Some(match kind {
        "track" => &[Own::Moved("event"), Own::Object("properties")],
        "identify" => &[Own::Object("traits")],
        "group" => &[Own::Moved("groupId"), Own::Object("traits")],
        "screen" => &[
            Own::Moved("name"),
            Own::Moved("category"),
            Own::Moved("properties"),
        ],
        "alias" => &[],
        _ => return None,
    })
}

/// The delete notification: only `type`, `userId` and `timestamp`, no
/// `version` (the one message shape without it).
pub fn delete_message(user_id: &str, timestamp: &str) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), Value::from("delete"));
    out.insert("userId".into(), Value::from(user_id));
    out.insert("timestamp".into(), Value::from(timestamp));
    Value::Object(out)
}

/// Renders a message to the exact bytes sent and signed.
pub fn render(message: &Value) -> Vec<u8> {
    let mut body = Vec::with_capacity(512);
    sluice_signing::json::write_js_json(message, &mut body);
    body
}

/// Page properties: the four documented keys first (falling back to
/// `context.page` for the ones the caller left out), then the rest as sent.
fn page_properties(
    mut props: Map<String, Value>,
    page: Option<&Map<String, Value>>,
) -> Map<String, Value> {
    let mut out = Map::new();
    for key in PAGE_KEYS {
        // A `null` the caller sent counts as left out, but is kept when
        // `context.page` has nothing better: values are never invented.
        let own = props.shift_remove(key);
        let value = match own {
            Some(v) if !v.is_null() => Some(v),
            own => page
                .and_then(|p| p.get(key))
                .filter(|v| !v.is_null())
                .cloned()
                .or(own),
        };
        if let Some(value) = value {
            out.insert(key.into(), value);
        }
    }
    out.extend(props);
    out
}

fn move_key(src: &mut Map<String, Value>, out: &mut Map<String, Value>, key: &str) {
    move_as(src, out, key, key);
}

fn move_as(src: &mut Map<String, Value>, out: &mut Map<String, Value>, from: &str, to: &str) {
    if let Some(value) = src.shift_remove(from).filter(|v| !v.is_null()) {
        out.insert(to.into(), value);
    }
}

/// Takes an object-valued key; a missing, null or non-object value becomes `{}`.
fn take_object(src: &mut Map<String, Value>, key: &str) -> Map<String, Value> {
    match src.shift_remove(key) {
        Some(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

#[cfg(test)]
mod tests;
