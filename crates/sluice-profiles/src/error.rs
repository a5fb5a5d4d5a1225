//! Errors of the profile engine.

/// A definition that cannot be accepted; `field` names where.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct DefinitionError {
    pub field: String,
    pub message: String,
}

impl DefinitionError {
    pub fn new(field: &str, message: impl std::fmt::Display) -> Self {
        DefinitionError {
            field: field.to_owned(),
            message: message.to_string(),
        }
    }
}

/// Why an engine step failed (it is retried from the committed state).
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("store: {0}")]
    Store(#[from] sluice_store::StoreError),
    #[error("stored profile {0} is not valid: {1}")]
    Corrupt(String, String),
    #[error("profile engine compute thread: {0}")]
    Compute(String),
    /// The feed's event log failed; its message names it.
    #[error("{0}")]
    Log(String),
}
