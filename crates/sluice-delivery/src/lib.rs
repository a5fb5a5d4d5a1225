//! Webhook delivery: turns stored deliveries into signed HTTP POSTs, retries
//! them by policy, and records every attempt.
//!
//! Modules:
//! - [`config`]: [`DeliveryConfig`], every timing and limit, with spec defaults.
//! - [`policy`]: the pure retry policy (classification, backoff, decision).
//! - [`payload`]: stored event → webhook message in the seed's shapes → bytes.
//! - [`error`]: [`DeliveryError`].
//! - `sender`: the shared HTTP client; one POST per URL, concurrently.
//! - `engine`: the dispatcher, destination cache and report writer.

pub mod config;
pub mod error;
pub mod payload;
pub mod policy;

pub use config::DeliveryConfig;
pub use error::DeliveryError;
