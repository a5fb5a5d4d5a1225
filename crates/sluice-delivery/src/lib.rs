//! Webhook delivery: turns stored deliveries into signed HTTP POSTs, retries
//! them by policy, and records every attempt in the store.
//!
//! Start it with [`DeliveryEngine::start`]; poke it with
//! [`EngineHandle::notify`] after each ingest commit.
//!
//! Modules:
//! - [`config`]: [`DeliveryConfig`], every timing and limit, with spec defaults.
//! - [`policy`]: the pure retry policy (classification, backoff, decision).
//! - [`payload`]: stored event → webhook message in the seed's shapes → bytes.
//! - [`sender`]: the shared HTTP client; one POST per URL, all URLs at once.
//! - `engine`: the dispatcher, destination cache and grouped report writer.
//! - [`error`]: the [`DeliveryError`] type.

pub mod config;
mod engine;
pub mod error;
pub mod payload;
pub mod policy;
pub mod sender;

pub use config::DeliveryConfig;
pub use engine::{DeliveryEngine, EngineHandle};
pub use error::DeliveryError;
