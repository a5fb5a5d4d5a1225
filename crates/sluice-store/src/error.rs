//! Store errors.

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A referenced record does not exist (for example a connected source).
    #[error("{0} not found")]
    NotFound(String),
    /// A uniqueness rule was broken (duplicate id or write key).
    #[error("conflict: {0}")]
    Conflict(String),
    /// The store is shutting down or its writer has stopped.
    #[error("store is closed")]
    Closed,
    /// The backend failed; the text is for logs, never for clients.
    #[error("backend: {0}")]
    Backend(String),
}
