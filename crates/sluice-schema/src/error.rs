//! Errors from parsing rule and filter documents.

/// A rule or filter document that cannot be used. `field` is the JSON path
/// of the offending field (`filters[1].when.field`), so the admin API can
/// name it in its 400.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct RuleError {
    pub field: String,
    pub message: String,
}

impl RuleError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        RuleError {
            field: field.into(),
            message: message.into(),
        }
    }
}
