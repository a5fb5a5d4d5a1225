//! Request body → validated, enriched events.
//!
//! Order of checks: body size (before any parsing, so an oversized body costs
//! nothing), lone-surrogate repair, JSON syntax, then for a batch the item
//! count, and per item its raw size, shape, type, its size and nesting with
//! the batch-level `context`/`integrations` merged in ([`crate::merge`]),
//! required fields and enrichment. The first error rejects the whole
//! request.

use std::net::IpAddr;

use chrono::{DateTime, Utc};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::enrich::{BatchDefaults, Received, enrich, time_field};
use crate::merge::{BatchObject, not_an_object};
use crate::raw::{self, Field, RawObject, value_field};
use crate::{Endpoint, ErrorCode, EventType, Limits, Outline, Shape, ValidationError, text};

/// Facts about the HTTP request that enrichment needs.
#[derive(Debug, Clone)]
pub struct RequestContext {
    /// Server time when the request arrived; becomes `receivedAt`.
    pub received_at: DateTime<Utc>,
    /// The client's address (peer, or trusted `X-Forwarded-For`); fills
    /// `context.ip` when the client did not set it.
    pub client_ip: Option<IpAddr>,
}

/// A parsed request: the write key found in the body, if any, and its events.
#[derive(Debug, Clone)]
pub struct Envelope {
    pub write_key: Option<String>,
    pub events: Vec<Event>,
}

/// One validated, enriched call.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub message_id: String,
    pub event_type: EventType,
    pub user_id: Option<String>,
    pub anonymous_id: Option<String>,
    pub received_at: DateTime<Utc>,
    pub timestamp: DateTime<Utc>,
    /// The whole message as stored and later delivered, as compact JSON
    /// text: the client's keys (batch-level `context`/`integrations` merged
    /// in, `writeKey` removed) plus `type`, `messageId`, `receivedAt`,
    /// `timestamp`, `originalTimestamp` (when the client sent one), `sentAt`
    /// (when known) and `context.ip`, timestamps rendered by
    /// [`crate::time::format`]. Values the server did not touch keep the
    /// client's text as received.
    pub json: String,
    /// The final `integrations` object, when the call has one (routing).
    pub integrations: Option<Map<String, Value>>,
    /// The call's shape, when the request was parsed with
    /// [`parse_request_with_shapes`].
    pub shape: Option<Shape>,
    /// Where each top-level member sits in [`Event::json`], when the parse
    /// was asked for it ([`Extras::outlines`]).
    pub outline: Option<Outline>,
}

impl Event {
    /// The stored message parsed as a map (tests and inspection; the ingest
    /// path uses [`Event::json`] as it is).
    pub fn body(&self) -> Map<String, Value> {
        serde_json::from_str(&self.json).unwrap_or_default()
    }
}

/// Parses, validates and enriches one collection request. A request with any
/// invalid item is rejected whole.
///
/// `body` is the decompressed request body. On a single-call endpoint the
/// path decides the call's type and overwrites any `type` in the body: the
/// browser and server libraries post each call to its typed path, so the
/// path is what the client meant. `writeKey` is taken out of every stored
/// body (it is a secret) and returned in [`Envelope::write_key`].
pub fn parse_request(
    endpoint: Endpoint,
    body: &[u8],
    ctx: &RequestContext,
    limits: &Limits,
) -> Result<Envelope, ValidationError> {
    parse_request_with(endpoint, body, ctx, limits, Extras::default())
}

/// [`parse_request`], also taking each event's [`Shape`] ([`Event::shape`])
/// and [`Outline`] ([`Event::outline`]) from the parse, for the source
/// schema, rules and filters: cheaper than reading them from the stored body
/// afterwards.
pub fn parse_request_with_shapes(
    endpoint: Endpoint,
    body: &[u8],
    ctx: &RequestContext,
    limits: &Limits,
) -> Result<Envelope, ValidationError> {
    let extras = Extras {
        shapes: true,
        outlines: true,
    };
    parse_request_with(endpoint, body, ctx, limits, extras)
}

/// What a parse takes beside each event, for the readers that need it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Extras {
    /// Each event's [`Shape`] (the schema, rules and filters).
    pub shapes: bool,
    /// Each event's [`Outline`] (filters reading property values).
    pub outlines: bool,
}

/// [`parse_request`], taking what `extras` asks for beside each event.
pub fn parse_request_with(
    endpoint: Endpoint,
    body: &[u8],
    ctx: &RequestContext,
    limits: &Limits,
    extras: Extras,
) -> Result<Envelope, ValidationError> {
    let max = limits.max_body_bytes(endpoint);
    if body.len() > max {
        return Err(ValidationError::new(
            ErrorCode::BodyTooLarge,
            format!(
                "request body is {} bytes, over the limit of {max}",
                body.len()
            ),
        ));
    }
    let body = text::replace_lone_surrogates(body);
    match endpoint {
        Endpoint::Single(event_type) => parse_single(event_type, &body, ctx, extras),
        Endpoint::Batch => parse_batch(&body, ctx, limits, extras),
    }
}

fn parse_single(
    event_type: EventType,
    body: &[u8],
    ctx: &RequestContext,
    extras: Extras,
) -> Result<Envelope, ValidationError> {
    let full_parse = || serde_json::from_slice::<Map<String, Value>>(body).map(drop);
    let mut call: RawObject<'_> = match serde_json::from_slice(body) {
        Ok(call) => call,
        Err(error) => return Err(body_json_error(full_parse().err().unwrap_or(error))),
    };
    if raw::needs_full_parse(body) {
        full_parse().map_err(body_json_error)?;
    }
    let write_key = take_write_key(&mut call);
    let received = Received::new(ctx, extras);
    let defaults = BatchDefaults::default();
    let event = enrich(call, body.len(), event_type, &defaults, &received)?;
    Ok(Envelope {
        write_key,
        events: vec![event],
    })
}

fn parse_batch(
    body: &[u8],
    ctx: &RequestContext,
    limits: &Limits,
    extras: Extras,
) -> Result<Envelope, ValidationError> {
    let mut top = read_envelope(body)?;
    let raw_items = top.batch.take().ok_or_else(not_an_array)?.0;
    if raw_items.len() > limits.max_batch_events {
        return Err(ValidationError::new(
            ErrorCode::TooManyEvents,
            format!(
                "batch has {} events, over the limit of {}",
                raw_items.len(),
                limits.max_batch_events
            ),
        ));
    }
    let defaults = batch_defaults(&top, limits)?;
    let mut write_key = top.write_key.and_then(string_of);
    let received = Received::new(ctx, extras);
    let mut events = Vec::with_capacity(raw_items.len());
    for (index, raw) in raw_items.into_iter().enumerate() {
        let (mut call, event_type) = batch_item(raw, limits).map_err(|e| at_index(index, e))?;
        let item_key = take_write_key(&mut call);
        write_key = write_key.or(item_key);
        let size = raw.get().len();
        events.push(
            enrich(call, size, event_type, &defaults, &received).map_err(|e| at_index(index, e))?,
        );
    }
    Ok(Envelope { write_key, events })
}

/// The batch envelope, read in one pass over the body. Its values stay raw
/// text borrowed from the body: each item's exact size is known without a
/// second scan, and only the items are parsed into maps. Other top-level keys
/// (the batch `messageId`, `sentAt` aside) are skipped.
#[derive(serde::Deserialize)]
struct RawEnvelope<'a> {
    #[serde(borrow, default)]
    batch: Option<RawItems<'a>>,
    #[serde(borrow, default)]
    context: Option<&'a RawValue>,
    #[serde(borrow, default)]
    integrations: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "sentAt")]
    sent_at: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "writeKey")]
    write_key: Option<&'a RawValue>,
}

/// The items of `batch`, each as its raw JSON text.
struct RawItems<'a>(Vec<&'a RawValue>);

const NOT_AN_ARRAY: &str = "'batch' must be an array";

fn not_an_array() -> ValidationError {
    ValidationError::new(ErrorCode::InvalidField, NOT_AN_ARRAY)
}

impl<'de: 'a, 'a> serde::Deserialize<'de> for RawItems<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Items<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> serde::de::Visitor<'de> for Items<'a> {
            type Value = RawItems<'a>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(NOT_AN_ARRAY)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Self::Value, A::Error> {
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
                while let Some(item) = seq.next_element::<&'de RawValue>()? {
                    items.push(item);
                }
                Ok(RawItems(items))
            }
        }
        deserializer.deserialize_seq(Items(std::marker::PhantomData))
    }
}

fn read_envelope(body: &[u8]) -> Result<RawEnvelope<'_>, ValidationError> {
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    if first.is_some_and(|b| *b != b'{') {
        return Err(ValidationError::new(
            ErrorCode::InvalidJson,
            "request body must be a JSON object",
        ));
    }
    serde_json::from_slice(body).map_err(|error| {
        if error.is_data() && error.to_string().contains(NOT_AN_ARRAY) {
            not_an_array()
        } else if error.is_data() {
            ValidationError::new(
                ErrorCode::InvalidJson,
                format!("invalid request body: {error}"),
            )
        } else {
            body_json_error(error)
        }
    })
}

/// Batch-level `context`, `integrations` and `sentAt`. The batch-level
/// `messageId` (analytics-go v2) identifies the request, not any item, and is
/// ignored.
fn batch_defaults(
    top: &RawEnvelope<'_>,
    limits: &Limits,
) -> Result<BatchDefaults, ValidationError> {
    let mut shared: Map<String, Value> = Map::new();
    for (key, raw) in [
        ("context", top.context),
        ("integrations", top.integrations),
        ("sentAt", top.sent_at),
    ] {
        if let Some(raw) = raw {
            let value = serde_json::from_str(raw.get()).map_err(body_json_error)?;
            shared.insert(key.into(), value);
        }
    }
    Ok(BatchDefaults {
        context: object_field(&mut shared, "context")?.map(BatchObject::new),
        integrations: object_field(&mut shared, "integrations")?.map(BatchObject::new),
        sent_at: time_field(value_field(shared.get("sentAt")), "sentAt")?,
        max_event_bytes: limits.max_call_bytes,
    })
}

fn object_field(
    map: &mut Map<String, Value>,
    key: &str,
) -> Result<Option<Map<String, Value>>, ValidationError> {
    match map.remove(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(object)) => Ok(Some(object)),
        Some(_) => Err(not_an_object(key)),
    }
}

/// One batch item: within the per-call size limit, an object, with a known
/// string `type`. Its top level is read with values kept raw.
fn batch_item<'a>(
    raw: &'a RawValue,
    limits: &Limits,
) -> Result<(RawObject<'a>, EventType), ValidationError> {
    let size = raw.get().len();
    if size > limits.max_call_bytes {
        return Err(ValidationError::new(
            ErrorCode::EventTooLarge,
            format!(
                "event is {size} bytes, over the limit of {}",
                limits.max_call_bytes
            ),
        ));
    }
    // The whole body already parsed as JSON, so only shape errors (not an
    // object) and what only a full parse finds (nesting deeper than
    // serde_json's recursion limit, numbers out of range) remain. Any error
    // is reported as the full parse words it.
    let full_parse = || serde_json::from_str::<Map<String, Value>>(raw.get()).map(drop);
    let call: RawObject<'a> = match serde_json::from_str(raw.get()) {
        Ok(call) => call,
        Err(error) => return Err(item_json_error(full_parse().err().unwrap_or(error))),
    };
    if raw::needs_full_parse(raw.get().as_bytes()) {
        full_parse().map_err(item_json_error)?;
    }
    let event_type = match call.field("type") {
        Field::Str(name) => EventType::from_name(&name).ok_or_else(|| {
            ValidationError::new(
                ErrorCode::UnknownType,
                format!("unknown type '{}'", name.escape_debug()),
            )
        })?,
        _ => {
            return Err(ValidationError::new(
                ErrorCode::MissingType,
                "event requires a string 'type'",
            ));
        }
    };
    Ok((call, event_type))
}

fn item_json_error(error: serde_json::Error) -> ValidationError {
    if error.is_data() {
        ValidationError::new(ErrorCode::InvalidField, "event must be a JSON object")
    } else {
        ValidationError::new(ErrorCode::InvalidJson, format!("invalid JSON: {error}"))
    }
}

/// Removes `writeKey` from a call, returning it when it is a string.
fn take_write_key(call: &mut RawObject<'_>) -> Option<String> {
    match call.shift_remove("writeKey")?.field() {
        Field::Str(key) => Some(key.into_owned()),
        _ => None,
    }
}

fn string_of(raw: &RawValue) -> Option<String> {
    serde_json::from_str::<String>(raw.get()).ok()
}

fn at_index(index: usize, error: ValidationError) -> ValidationError {
    ValidationError {
        index: Some(index),
        ..ValidationError::new(error.code, format!("batch[{index}]: {}", error.message))
    }
}

/// A body that is not valid JSON reports serde's reason with line and
/// column; valid JSON of the wrong shape says what was expected.
fn body_json_error(error: serde_json::Error) -> ValidationError {
    let message = if error.is_data() {
        "request body must be a JSON object".to_owned()
    } else {
        format!("invalid JSON: {error}")
    };
    ValidationError::new(ErrorCode::InvalidJson, message)
}
