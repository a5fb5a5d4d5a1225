//! Store errors.
//!
//! Callers decide by kind, never by text: [`StoreError::is_transient`] says
//! whether the same call may succeed if retried later (the API answers `503`
//! with `Retry-After`, a delivery report is retried), and anything else is a
//! fault to log and surface (`500`). The text is for logs, never for clients.

use std::fmt;

/// The error of a driver or of the operating system, kept for logs and for
/// callers that need to look closer (`source()`).
pub type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;

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
    /// The backend failed: what went wrong, in what way, and the driver's
    /// own error when there is one.
    #[error("{kind}: {context}")]
    Backend {
        /// How the failure should be treated.
        kind: ErrorKind,
        /// What was being done, with the backend's message.
        context: String,
        /// The driver's or the system's error.
        #[source]
        cause: Option<Cause>,
    },
}

/// How a backend failure should be treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The database cannot be reached or cannot take writes right now: a
    /// lost or refused connection, a server shutting down, a full disk, an
    /// I/O error. Transient.
    Unavailable,
    /// Waiting took too long: for a pooled connection, a lock, a statement.
    /// Transient.
    Timeout,
    /// Two writers collided (serialization failure, deadlock) or a
    /// neighbouring write in the same group commit failed. Transient.
    Contention,
    /// Stored data does not read back as what was written (a corrupt file,
    /// unparsable stored JSON, a value out of range). Not transient.
    Corrupt,
    /// The database schema is not what this build expects (newer, or
    /// missing a table). Not transient.
    Schema,
    /// A setting that cannot work (a malformed URL, a missing certificate,
    /// a data directory another process holds). Not transient.
    Config,
    /// A fault in Sluice itself (an unexpected state, a panicking job). Not
    /// transient.
    Internal,
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Contention => "contention",
            ErrorKind::Corrupt => "corrupt",
            ErrorKind::Schema => "schema",
            ErrorKind::Config => "config",
            ErrorKind::Internal => "internal",
        })
    }
}

impl ErrorKind {
    /// Whether the same operation may succeed when retried later.
    pub fn is_transient(self) -> bool {
        matches!(
            self,
            ErrorKind::Unavailable | ErrorKind::Timeout | ErrorKind::Contention
        )
    }
}

impl StoreError {
    /// A backend failure of `kind` with no driver error behind it.
    pub fn backend(kind: ErrorKind, context: impl Into<String>) -> StoreError {
        StoreError::Backend {
            kind,
            context: context.into(),
            cause: None,
        }
    }

    /// A backend failure of `kind` caused by `cause`.
    pub fn caused(kind: ErrorKind, context: impl Into<String>, cause: impl Into<Cause>) -> Self {
        StoreError::Backend {
            kind,
            context: context.into(),
            cause: Some(cause.into()),
        }
    }

    /// A fault in Sluice itself: a state that should not occur.
    pub fn internal(context: impl Into<String>) -> StoreError {
        StoreError::backend(ErrorKind::Internal, context)
    }

    /// Stored data that does not read back.
    pub fn corrupt(context: impl Into<String>) -> StoreError {
        StoreError::backend(ErrorKind::Corrupt, context)
    }

    /// The backend failure's kind; `None` for the other variants.
    pub fn kind(&self) -> Option<ErrorKind> {
        match self {
            StoreError::Backend { kind, .. } => Some(*kind),
            _ => None,
        }
    }

    /// Whether the same call may succeed when retried later: the store is
    /// closing, unreachable, busy or contended. A missing record, a conflict
    /// or a fault is not.
    pub fn is_transient(&self) -> bool {
        match self {
            StoreError::Closed => true,
            StoreError::Backend { kind, .. } => kind.is_transient(),
            StoreError::NotFound(_) | StoreError::Conflict(_) => false,
        }
    }

    /// The same failure with `what` put in front of its context (which
    /// server, which file), keeping the kind and the cause.
    pub fn context(self, what: impl fmt::Display) -> StoreError {
        match self {
            StoreError::Backend {
                kind,
                context,
                cause,
            } => StoreError::Backend {
                kind,
                context: format!("{what}: {context}"),
                cause,
            },
            other => other,
        }
    }
}

impl From<serde_json::Error> for StoreError {
    fn from(e: serde_json::Error) -> Self {
        StoreError::caused(ErrorKind::Corrupt, format!("stored JSON: {e}"), e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_waiting_and_unreachable_failures_are_transient() {
        assert!(StoreError::backend(ErrorKind::Unavailable, "x").is_transient());
        assert!(StoreError::backend(ErrorKind::Timeout, "x").is_transient());
        assert!(StoreError::backend(ErrorKind::Contention, "x").is_transient());
        assert!(StoreError::Closed.is_transient());
        assert!(!StoreError::internal("x").is_transient());
        assert!(!StoreError::corrupt("x").is_transient());
        assert!(!StoreError::backend(ErrorKind::Schema, "x").is_transient());
        assert!(!StoreError::Conflict("x".into()).is_transient());
        assert!(!StoreError::NotFound("x".into()).is_transient());
    }

    #[test]
    fn context_keeps_kind_and_cause() {
        let io = std::io::Error::other("disk gone");
        let e = StoreError::caused(ErrorKind::Unavailable, "write", io).context("db.sqlite");
        assert_eq!(e.kind(), Some(ErrorKind::Unavailable));
        assert_eq!(e.to_string(), "unavailable: db.sqlite: write");
        let cause = std::error::Error::source(&e).map(ToString::to_string);
        assert_eq!(cause.as_deref(), Some("disk gone"));
    }
}
