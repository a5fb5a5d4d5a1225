//! One call → validated, enriched [`Event`]: batch defaults merged in,
//! `type`, `messageId`, `receivedAt`, clock-skew corrected `timestamp`,
//! `originalTimestamp`, `sentAt` and `context.ip` set.
//!
//! Key order: the client's keys keep their order (a key the server rewrites,
//! like `type` or `timestamp`, keeps its position); keys the server adds are
//! appended in the order merged `context`/`integrations`, `type`,
//! `messageId`, `receivedAt`, `timestamp`, `originalTimestamp`, `sentAt`,
//! then `context` when the call still has none. Every delivered call carries
//! a `context` object, as Segment's own deliveries do (receivers read
//! `context.ip` and `context.library` without checking), so one is created
//! when absent.

use std::cell::OnceCell;
use std::net::IpAddr;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::merge::{self, BatchObject};
use crate::raw::{Field, RawObject, Slot};
use crate::validate::check_required;
use crate::{ErrorCode, Event, EventType, Extras, RequestContext, ValidationError, time};

/// Longest accepted `messageId`, in characters: receivers and stores use it
/// as a dedup key.
pub const MAX_MESSAGE_ID_CHARS: usize = 100;

/// Values a batch gives to each of its items.
#[derive(Debug, Default)]
pub(crate) struct BatchDefaults {
    /// Batch-level `context`, merged key by key under each item's own.
    pub context: Option<BatchObject>,
    /// Batch-level `integrations`, merged the same way.
    pub integrations: Option<BatchObject>,
    /// Batch-level `sentAt`, for items without their own.
    pub sent_at: Option<DateTime<Utc>>,
    /// The per-event size limit an item must keep with `context` and
    /// `integrations` merged in ([`crate::Limits::max_call_bytes`]).
    pub max_event_bytes: usize,
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
    merge::open_context(&mut call)?;
    let own_integrations = merge::own_integrations(&call)?;
    let batch = [defaults.context.as_ref(), defaults.integrations.as_ref()];
    if batch.iter().any(Option::is_some) {
        merge::check(
            &call,
            raw_len,
            own_integrations.as_ref(),
            batch,
            defaults.max_event_bytes,
        )?;
    }
    let [context, integrations] = batch.map(|object| object.map(|o| &o.map));
    merge::merge_context(&mut call, context);
    let integrations = merge::merge_integrations(&mut call, own_integrations, integrations);
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
/// client did not set one. `merge::open_context` already rejected a
/// non-object and opened the call's own one.
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
