//! Validation errors with stable machine-readable codes.

/// Stable error codes returned to clients in the `code` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    InvalidJson,
    BodyTooLarge,
    EventTooLarge,
    TooManyEvents,
    MissingType,
    UnknownType,
    MissingIdentity,
    MissingField,
    InvalidField,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidJson => "invalid_json",
            ErrorCode::BodyTooLarge => "body_too_large",
            ErrorCode::EventTooLarge => "event_too_large",
            ErrorCode::TooManyEvents => "too_many_events",
            ErrorCode::MissingType => "missing_type",
            ErrorCode::UnknownType => "unknown_type",
            ErrorCode::MissingIdentity => "missing_identity",
            ErrorCode::MissingField => "missing_field",
            ErrorCode::InvalidField => "invalid_field",
        }
    }
}

/// Why a request was rejected. `message` names the field and, in a batch,
/// the item index (`batch[3]: track requires 'event'`); `index` carries that
/// index for machines, so a client can drop the refused item alone and
/// resend its siblings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ValidationError {
    pub code: ErrorCode,
    pub message: String,
    /// The refused batch item, when one item (not the batch) is at fault.
    pub index: Option<usize>,
}

impl ValidationError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ValidationError {
            code,
            message: message.into(),
            index: None,
        }
    }
}
