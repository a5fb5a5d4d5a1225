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

use std::cell::OnceCell;
use std::net::IpAddr;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use crate::raw::{self, Field, RawObject, Slot};
use crate::validate::check_required;
use crate::{ErrorCode, Event, EventType, Extras, RequestContext, ValidationError, time};

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
/// So is the client's address, when a call lacks `context.ip` (most clients
/// set none; some set their own, and then it is never rendered). It also
/// carries whether the request's events get their [`crate::Shape`] and
/// [`crate::Outline`].
pub(crate) struct Received {
    pub at: DateTime<Utc>,
    pub text: String,
    pub shapes: bool,
    pub outlines: bool,
    client_ip: Option<IpAddr>,
    ip_text: OnceCell<Option<String>>,
}

impl Received {
    pub fn new(ctx: &RequestContext, extras: Extras) -> Self {
        Received {
            at: ctx.received_at,
            text: time::format(&ctx.received_at),
            shapes: extras.shapes,
            outlines: extras.outlines,
            client_ip: ctx.client_ip,
            ip_text: OnceCell::new(),
        }
    }

    /// The client's address as `context.ip` takes it.
    fn ip(&self) -> Option<Value> {
        self.ip_text
            .get_or_init(|| self.client_ip.map(|ip| ip.to_string()))
            .clone()
            .map(Value::String)
    }
}

/// Validates and enriches one call whose type is already known. Error
/// messages carry no batch index; the caller adds it. `raw_len` is the
/// call's size as received, used to size the stored text.
pub(crate) fn enrich<'a>(
    mut call: RawObject<'a>,
    raw_len: usize,
    event_type: EventType,
    defaults: &'a BatchDefaults,
    received: &Received,
) -> Result<Event, ValidationError> {
    merge_context(&mut call, defaults.context.as_ref())?;
    let integrations = merge_integrations(&mut call, defaults.integrations.as_ref())?;
    let identity = check_required(&mut call, event_type)?;

    call.insert_value("type", Value::String(event_type.as_str().into()));
    let message_id = message_id(&mut call)?;

    let client_timestamp = time_field(call.field("timestamp"), "timestamp")?;
    let client_original = time_field(call.field("originalTimestamp"), "originalTimestamp")?;
    let sent_at = time_field(call.field("sentAt"), "sentAt")?.or(defaults.sent_at);
    // RudderStack's SDKs send `originalTimestamp` instead of `timestamp`;
    // either one is the client's clock reading of when the call happened.
    let original = client_timestamp.or(client_original);
    let received_at = received.at;
    let timestamp = match (original, sent_at) {
        (Some(original), Some(sent_at)) => skew_corrected(received_at, sent_at, original),
        (Some(original), None) => original,
        (None, _) => received_at,
    };

    call.insert_value("receivedAt", Value::String(received.text.clone()));
    if timestamp == received_at {
        call.insert_value("timestamp", Value::String(received.text.clone()));
    } else {
        put_time(&mut call, "timestamp", timestamp);
    }
    if let Some(original) = original {
        put_time(&mut call, "originalTimestamp", original);
    }
    if let Some(sent_at) = sent_at {
        put_time(&mut call, "sentAt", sent_at);
    }
    fill_context_ip(&mut call, received);
    let shape = received
        .shapes
        .then(|| crate::shape::of_call(&call, event_type));

    let (json, outline) = if received.outlines {
        call.to_json_outlined(raw_len)
    } else {
        (call.to_json(raw_len), None)
    };
    Ok(Event {
        message_id,
        event_type,
        user_id: identity.user_id,
        anonymous_id: identity.anonymous_id,
        received_at,
        timestamp,
        json,
        integrations,
        shape,
        outline,
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

/// Overlays the call's own `context` onto the batch-level one: the item's
/// keys win and keep their order; batch-only keys are appended. The call's
/// `context` is opened one level (its values stay raw) for `context.ip`. A
/// non-object `context` is rejected, since `context.ip` needs an object.
fn merge_context<'a>(
    call: &mut RawObject<'a>,
    batch: Option<&'a Map<String, Value>>,
) -> Result<(), ValidationError> {
    let Some(slot) = call.slot_mut("context") else {
        if let Some(batch) = batch {
            call.insert_value("context", Value::Object(batch.clone()));
        }
        return Ok(());
    };
    let own = std::mem::replace(slot, Slot::Owned(Value::Null));
    match raw::open_object(Some(own)) {
        Ok(Some(mut own)) => {
            if let Some(batch) = batch {
                own.append_missing(batch);
            }
            *slot = Slot::Object(own);
        }
        Ok(None) => {
            if let Some(batch) = batch {
                *slot = Slot::Owned(Value::Object(batch.clone()));
            }
        }
        Err(()) => return Err(not_an_object("context")),
    }
    Ok(())
}

/// The same overlay for `integrations`, which routing needs parsed: returns
/// the call's final `integrations` object, if any. Without a batch-level
/// object the call's own text is stored as it came.
fn merge_integrations(
    call: &mut RawObject<'_>,
    batch: Option<&Map<String, Value>>,
) -> Result<Option<Map<String, Value>>, ValidationError> {
    let own = match call.get("integrations") {
        None => None,
        Some(slot) if matches!(slot.field(), Field::Null) => None,
        Some(slot) => Some(raw::slot_map(slot).ok_or_else(|| not_an_object("integrations"))?),
    };
    match (own, batch) {
        (Some(mut own), Some(batch)) => {
            for (k, v) in batch {
                if !own.contains_key(k) {
                    own.insert(k.clone(), v.clone());
                }
            }
            call.insert_value("integrations", Value::Object(own.clone()));
            Ok(Some(own))
        }
        (None, Some(batch)) => {
            call.insert_value("integrations", Value::Object(batch.clone()));
            Ok(Some(batch.clone()))
        }
        (own, None) => Ok(own),
    }
}

pub(crate) fn not_an_object(key: &str) -> ValidationError {
    ValidationError::new(
        ErrorCode::InvalidField,
        format!("'{key}' must be an object"),
    )
}

/// Keeps a client `messageId` of 1 to 100 printable characters, generates
/// a UUID v4 when it is absent or `null`, and rejects anything else. The id
/// is sent in the `X-Sluice-Message-Id` header of every delivery, so a
/// control character (`\n`, `\r`, `\0`, DEL…) would make an accepted event
/// undeliverable, and a space at either end would not survive the trip
/// (HTTP strips it from a header value): both are refused at ingest instead.
fn message_id(call: &mut RawObject<'_>) -> Result<String, ValidationError> {
    match call.field("messageId") {
        Field::Null => {}
        Field::Str(id) if is_header_safe_id(&id) => return Ok(id.into_owned()),
        _ => {
            return Err(ValidationError::new(
                ErrorCode::InvalidField,
                format!(
                    "'messageId' must be a string of 1 to {MAX_MESSAGE_ID_CHARS} printable \
                     characters (no control characters, no space at either end)"
                ),
            ));
        }
    }
    let id = uuid::Uuid::new_v4().to_string();
    call.insert_value("messageId", Value::String(id.clone()));
    Ok(id)
}

/// 1 to 100 characters, none of them a control character, and no space at
/// either end.
pub fn is_header_safe_id(id: &str) -> bool {
    (1..=MAX_MESSAGE_ID_CHARS).contains(&id.chars().count())
        && !id.chars().any(char::is_control)
        && !id.starts_with(' ')
        && !id.ends_with(' ')
}

/// Reads an optional timestamp field: absent or `null` is `None`; a string
/// must parse with [`time::parse`]; anything else is rejected.
pub(crate) fn time_field(
    field: Field<'_>,
    key: &str,
) -> Result<Option<DateTime<Utc>>, ValidationError> {
    match field {
        Field::Null => Ok(None),
        Field::Str(s) => time::parse(&s).map(Some).ok_or_else(|| {
            ValidationError::new(
                ErrorCode::InvalidField,
                format!("'{key}' is not an ISO 8601 date-time"),
            )
        }),
        Field::Num(_) | Field::Other => Err(ValidationError::new(
            ErrorCode::InvalidField,
            format!("'{key}' must be an ISO 8601 date-time string"),
        )),
    }
}

fn put_time(call: &mut RawObject<'_>, key: &'static str, t: DateTime<Utc>) {
    call.insert_value(key, Value::String(time::format(&t)));
}

/// Ensures `context` exists and fills `context.ip` from the request when the
/// client did not set one. `merge_context` already rejected a non-object and
/// opened the call's own one.
fn fill_context_ip(call: &mut RawObject<'_>, received: &Received) {
    let with_ip = |ip: Option<Value>| {
        let mut context = RawObject::default();
        if let Some(ip) = ip {
            context.insert_value("ip", ip);
        }
        Slot::Object(context)
    };
    let Some(slot) = call.slot_mut("context") else {
        call.insert("context", with_ip(received.ip()));
        return;
    };
    match slot {
        Slot::Owned(Value::Null) => *slot = with_ip(received.ip()),
        Slot::Object(context) => {
            if matches!(context.field("ip"), Field::Null)
                && let Some(ip) = received.ip()
            {
                context.insert_value("ip", ip);
            }
        }
        Slot::Owned(Value::Object(context)) => {
            if context.get("ip").is_none_or(Value::is_null)
                && let Some(ip) = received.ip()
            {
                context.insert("ip".into(), ip);
            }
        }
        Slot::Owned(_) | Slot::Raw(_) => {}
    }
}
