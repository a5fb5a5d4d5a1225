//! The event log's errors.

use std::time::Duration;

/// What can go wrong appending to or reading from the event log.
///
/// [`LogError::is_transient`] decides, as the store's error kinds do, between
/// `503` with `Retry-After` (try again: nothing was lost, the caller still
/// holds the events) and `500`.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// The brokers did not acknowledge in time: down, unreachable, without a
    /// leader for a partition, or with fewer in-sync replicas than
    /// `min.insync.replicas`. The events may or may not be in the log; a
    /// retry appends them again under the same message ids.
    #[error("the event log is unavailable (waited {waited:?}): {reason}")]
    Unavailable {
        /// How long the append waited before giving up.
        waited: Duration,
        /// The client's word for the cause.
        reason: String,
    },
    /// A record is larger than the brokers accept (`message.max.bytes`).
    #[error("a record of {bytes} bytes is larger than the event log accepts")]
    TooLarge {
        /// The size of the record's value.
        bytes: usize,
    },
    /// The client refused its configuration.
    #[error("event log configuration: {0}")]
    Config(String),
    /// The idempotent producer hit a fatal error (its sequence numbers can
    /// no longer be trusted); it must be replaced by a new one.
    #[error("the event log's producer failed for good: {0}")]
    Fatal(String),
    /// Any other error of the client or the brokers.
    #[error("event log: {0}")]
    Client(String),
}

impl LogError {
    /// Whether trying again later can succeed: the API answers `503` with
    /// `Retry-After` for these, `500` for the rest.
    pub fn is_transient(&self) -> bool {
        matches!(self, LogError::Unavailable { .. } | LogError::Fatal(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_unavailable_brokers_and_replaced_producers_are_worth_a_retry() {
        let unavailable = LogError::Unavailable {
            waited: Duration::from_secs(5),
            reason: "Local: Message timed out".into(),
        };
        assert!(unavailable.is_transient());
        assert!(LogError::Fatal("epoch".into()).is_transient());
        assert!(!LogError::TooLarge { bytes: 2 << 20 }.is_transient());
        assert!(!LogError::Config("bad".into()).is_transient());
        assert!(!LogError::Client("unknown".into()).is_transient());
    }
}
