//! Errors of the delivery crate.

use std::path::PathBuf;

/// Why the delivery engine could not start, or why a stored event could not
/// be turned into a webhook body.
#[derive(Debug, thiserror::Error)]
pub enum DeliveryError {
    /// A [`crate::DeliveryConfig`] value is out of range.
    #[error("invalid delivery config: {0}")]
    Config(String),
    /// The extra CA bundle could not be read.
    #[error("cannot read CA bundle {path}: {source}")]
    CaFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The extra CA bundle holds no usable certificate.
    #[error("invalid CA bundle {path}: {reason}")]
    CaBundle { path: PathBuf, reason: String },
    /// The HTTP client could not be built.
    #[error("cannot build HTTP client: {0}")]
    Client(String),
    /// A stored event body is not a message Sluice can deliver.
    #[error("undeliverable event: {0}")]
    Payload(String),
}
