//! One call → validated, enriched [`Event`]: batch defaults merged in,
//! `type`, `messageId`, `receivedAt`, clock-skew corrected `timestamp`,
//! `originalTimestamp`, `sentAt` and `context.ip` set.
//!
//! Key order: the client's keys keep their order (a key the server rewrites,
//! like `type` or `timestamp`, keeps its position); keys the server adds are
//! appended in the order merged `context`/`integrations`, `type`,
//! `messageId`, `receivedAt`, `timestamp`, `originalTimestamp`, `sentAt`,
//! then `context` when the call still has none. Every delivered call carries
//! a `context` object (seed.md), so one is created when absent.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use crate::validate::check_required;
use crate::{ErrorCode, Event, EventType, RequestContext, ValidationError, time};

/// Longest accepted `messageId`, in characters: receivers and stores use it
/// as a dedup key.
pub const MAX_MESSAGE_ID_CHARS: usize = 100;

/// Values a batch gives to each of its items.
#[derive(Debug, Default)]
pub(crate) struct BatchDefaults {
    /// Batch-level `context`, merged key by key under each item's own.
    pub context: Option<Map<String, Value>>,
    /// Batch-level `integrations`, merged the same way.
    pub integrations: Option<Map<String, Value>>,
    /// Batch-level `sentAt`, for items without their own.
    pub sent_at: Option<DateTime<Utc>>,
}

/// `receivedAt` is one instant per request: rendered once, not per event.
pub(crate) struct Received {
    pub at: DateTime<Utc>,
    pub text: String,
}

impl Received {
    pub fn new(ctx: &RequestContext) -> Self {
        Received {
            at: ctx.received_at,
            text: time::format(&ctx.received_at),
        }
    }
}

/// Validates and enriches one call whose type is already known. Error
/// messages carry no batch index; the caller adds it.
pub(crate) fn enrich(
    mut call: Map<String, Value>,
    event_type: EventType,
    defaults: &BatchDefaults,
    received: &Received,
    ctx: &RequestContext,
) -> Result<Event, ValidationError> {
    merge_under(&mut call, "context", defaults.context.as_ref())?;
    merge_under(&mut call, "integrations", defaults.integrations.as_ref())?;
    let identity = check_required(&mut call, event_type)?;

    call.insert("type".into(), Value::String(event_type.as_str().into()));
    let message_id = message_id(&mut call)?;

    let client_timestamp = time_field(&call, "timestamp")?;
    let client_original = time_field(&call, "originalTimestamp")?;
    let sent_at = time_field(&call, "sentAt")?.or(defaults.sent_at);
    // RudderStack's SDKs send `originalTimestamp` instead of `timestamp`;
    // either one is the client's clock reading of when the call happened.
    let original = client_timestamp.or(client_original);
    let received_at = received.at;
    let timestamp = match (original, sent_at) {
        (Some(original), Some(sent_at)) => skew_corrected(received_at, sent_at, original),
        (Some(original), None) => original,
        (None, _) => received_at,
    };

    call.insert("receivedAt".into(), Value::String(received.text.clone()));
    if timestamp == received_at {
        call.insert("timestamp".into(), Value::String(received.text.clone()));
    } else {
        put_time(&mut call, "timestamp", timestamp);
    }
    if let Some(original) = original {
        put_time(&mut call, "originalTimestamp", original);
    }
    if let Some(sent_at) = sent_at {
        put_time(&mut call, "sentAt", sent_at);
    }
    fill_context_ip(&mut call, ctx);

    Ok(Event {
        message_id,
        event_type,
        user_id: identity.user_id,
        anonymous_id: identity.anonymous_id,
        received_at,
        timestamp,
        body: call,
    })
}

/// `receivedAt − (sentAt − original)`: the client's clock may be off, but the
/// time between the call and the send is measured on that same clock, so it
/// is subtracted from the server's arrival time. Falls back to the client's
/// time when the arithmetic leaves the renderable range (absurd inputs).
fn skew_corrected(
    received_at: DateTime<Utc>,
    sent_at: DateTime<Utc>,
    original: DateTime<Utc>,
) -> DateTime<Utc> {
    received_at
        .checked_sub_signed(sent_at.signed_duration_since(original))
        .filter(time::is_renderable)
        .unwrap_or(original)
}

/// Overlays the call's own object under `key` onto the batch-level one: the
/// item's keys win and keep their order; batch-only keys are appended. A
/// non-object value under `key` is rejected, since routing and `context.ip`
/// need an object there.
fn merge_under(
    call: &mut Map<String, Value>,
    key: &str,
    batch: Option<&Map<String, Value>>,
) -> Result<(), ValidationError> {
    match call.get_mut(key) {
        Some(Value::Object(own)) => {
            for (k, v) in batch.into_iter().flatten() {
                if !own.contains_key(k) {
                    own.insert(k.clone(), v.clone());
                }
            }
        }
        None | Some(Value::Null) => {
            if let Some(batch) = batch {
                call.insert(key.into(), Value::Object(batch.clone()));
            }
        }
        Some(_) => return Err(not_an_object(key)),
    }
    Ok(())
}

pub(crate) fn not_an_object(key: &str) -> ValidationError {
    ValidationError::new(
        ErrorCode::InvalidField,
        format!("'{key}' must be an object"),
    )
}

/// Keeps a client `messageId` of 1 to 100 characters, generates a UUID v4
/// when it is absent or `null`, and rejects anything else.
fn message_id(call: &mut Map<String, Value>) -> Result<String, ValidationError> {
    match call.get("messageId") {
        None | Some(Value::Null) => {
            let id = uuid::Uuid::new_v4().to_string();
            call.insert("messageId".into(), Value::String(id.clone()));
            Ok(id)
        }
        Some(Value::String(id)) if (1..=MAX_MESSAGE_ID_CHARS).contains(&id.chars().count()) => {
            Ok(id.clone())
        }
        Some(_) => Err(ValidationError::new(
            ErrorCode::InvalidField,
            format!("'messageId' must be a string of 1 to {MAX_MESSAGE_ID_CHARS} characters"),
        )),
    }
}

/// Reads an optional timestamp field: absent or `null` is `None`; a string
/// must parse with [`time::parse`]; anything else is rejected.
pub(crate) fn time_field(
    map: &Map<String, Value>,
    key: &str,
) -> Result<Option<DateTime<Utc>>, ValidationError> {
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => time::parse(s).map(Some).ok_or_else(|| {
            ValidationError::new(
                ErrorCode::InvalidField,
                format!("'{key}' is not an ISO 8601 date-time"),
            )
        }),
        Some(_) => Err(ValidationError::new(
            ErrorCode::InvalidField,
            format!("'{key}' must be an ISO 8601 date-time string"),
        )),
    }
}

fn put_time(call: &mut Map<String, Value>, key: &str, t: DateTime<Utc>) {
    call.insert(key.into(), Value::String(time::format(&t)));
}

/// Ensures `context` exists and fills `context.ip` from the request when the
/// client did not set one. `merge_under` already rejected a non-object.
fn fill_context_ip(call: &mut Map<String, Value>, ctx: &RequestContext) {
    let context = call
        .entry("context")
        .or_insert_with(|| Value::Object(Map::new()));
    if context.is_null() {
        *context = Value::Object(Map::new());
    }
    let (Value::Object(context), Some(ip)) = (context, ctx.client_ip) else {
        return;
    };
    if context.get("ip").is_none_or(Value::is_null) {
        context.insert("ip".into(), Value::String(ip.to_string()));
    }
}
