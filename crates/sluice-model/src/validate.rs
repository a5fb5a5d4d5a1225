//! Required fields per call type, and normalisation of identifier fields.
//!
//! Identifiers (`userId`, `anonymousId`, `previousId`, `groupId`) may arrive
//! as JSON numbers: several server libraries pass database ids straight
//! through. They are accepted and rewritten in the body as their decimal
//! string form (`42` → `"42"`), so destinations always see strings, the
//! type Segment's Spec gives these ids.

use serde_json::Value;

use crate::raw::{Field, RawObject};
use crate::{ErrorCode, EventType, ValidationError};

/// The identity of a validated call; empty strings count as absent.
#[derive(Debug, Default)]
pub(crate) struct Identity {
    pub user_id: Option<String>,
    pub anonymous_id: Option<String>,
}

/// Checks the fields `event_type` requires and rewrites numeric identifiers
/// as strings. Messages name the call type and the field, without a batch
/// index (the caller adds it).
pub(crate) fn check_required(
    call: &mut RawObject<'_>,
    event_type: EventType,
) -> Result<Identity, ValidationError> {
    let identity = Identity {
        user_id: identifier(call, "userId")?,
        anonymous_id: identifier(call, "anonymousId")?,
    };
    let kind = event_type.as_str();
    match event_type {
        EventType::Alias => {
            if identity.user_id.is_none() {
                return Err(ValidationError::new(
                    ErrorCode::MissingIdentity,
                    "alias requires 'userId'",
                ));
            }
            require_identifier(call, kind, "previousId")?;
        }
        _ if identity.user_id.is_none() && identity.anonymous_id.is_none() => {
            return Err(ValidationError::new(
                ErrorCode::MissingIdentity,
                format!("{kind} requires 'userId' or 'anonymousId'"),
            ));
        }
        EventType::Track => require_event_name(call)?,
        EventType::Group => require_identifier(call, kind, "groupId")?,
        EventType::Identify | EventType::Page | EventType::Screen => {}
    }
    Ok(identity)
}

/// Reads an identifier field: a string (empty means absent) or a number,
/// which is rewritten in place as a string. Absent or `null` gives `None`;
/// any other JSON type is an `invalid_field` error.
fn identifier(
    call: &mut RawObject<'_>,
    key: &'static str,
) -> Result<Option<String>, ValidationError> {
    let number = match call.field(key) {
        Field::Null => return Ok(None),
        Field::Str(s) if s.is_empty() => return Ok(None),
        Field::Str(s) => return Ok(Some(s.into_owned())),
        Field::Num(n) => n,
        Field::Other => {
            return Err(ValidationError::new(
                ErrorCode::InvalidField,
                format!("'{key}' must be a string or a number"),
            ));
        }
    };
    let text = number_id(&number);
    call.insert_value(key, Value::String(text.clone()));
    Ok(Some(text))
}

/// A numeric identifier as text: an integer keeps its exact digits (64-bit
/// ids are common and must not be rounded), any other number is written as
/// JavaScript's `String(n)` writes it, as a Segment client in JavaScript
/// would have sent it (`4242.0` → `"4242"`, `1E2` → `"100"`, `-0` → `"0"`).
fn number_id(n: &serde_json::Number) -> String {
    match n.as_f64() {
        Some(f) if !n.is_u64() && !n.is_i64() && f.is_finite() => {
            ryu_js::Buffer::new().format_finite(f).to_owned()
        }
        _ => n.to_string(),
    }
}

fn require_identifier(
    call: &mut RawObject<'_>,
    kind: &str,
    key: &'static str,
) -> Result<(), ValidationError> {
    match identifier(call, key)? {
        Some(_) => Ok(()),
        None => Err(ValidationError::new(
            ErrorCode::MissingField,
            format!("{kind} requires '{key}'"),
        )),
    }
}

/// A track call names its event with a non-empty string.
fn require_event_name(call: &RawObject<'_>) -> Result<(), ValidationError> {
    match call.field("event") {
        Field::Str(s) if !s.is_empty() => Ok(()),
        Field::Null | Field::Str(_) => Err(ValidationError::new(
            ErrorCode::MissingField,
            "track requires 'event'",
        )),
        Field::Num(_) | Field::Other => Err(ValidationError::new(
            ErrorCode::InvalidField,
            "'event' must be a string",
        )),
    }
}
