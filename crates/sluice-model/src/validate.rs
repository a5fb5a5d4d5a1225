//! Required fields per call type, and normalisation of identifier fields.
//!
//! Identifiers (`userId`, `anonymousId`, `previousId`, `groupId`) may arrive
//! as JSON numbers: several server libraries pass database ids straight
//! through. They are accepted and rewritten in the body as their decimal
//! string form (`42` → `"42"`), so destinations always see strings, as the
//! message tables in the spec describe.

use serde_json::{Map, Value};

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
    call: &mut Map<String, Value>,
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
fn identifier(call: &mut Map<String, Value>, key: &str) -> Result<Option<String>, ValidationError> {
    match call.get_mut(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(slot @ Value::Number(_)) => {
            let text = slot.to_string();
            *slot = Value::String(text.clone());
            Ok(Some(text))
        }
        Some(_) => Err(ValidationError::new(
            ErrorCode::InvalidField,
            format!("'{key}' must be a string or a number"),
        )),
    }
}

fn require_identifier(
    call: &mut Map<String, Value>,
    kind: &str,
    key: &str,
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
fn require_event_name(call: &Map<String, Value>) -> Result<(), ValidationError> {
    match call.get("event") {
        Some(Value::String(s)) if !s.is_empty() => Ok(()),
        None | Some(Value::Null) | Some(Value::String(_)) => Err(ValidationError::new(
            ErrorCode::MissingField,
            "track requires 'event'",
        )),
        Some(_) => Err(ValidationError::new(
            ErrorCode::InvalidField,
            "'event' must be a string",
        )),
    }
}
