//! Webhook delivery: turns stored deliveries into signed HTTP POSTs, retries
//! them by policy, and records every attempt in the store.
//!
//! Start it with [`DeliveryEngine::start`]; poke it with
//! [`EngineHandle::notify`] after each ingest commit.
//!
//! Modules:
//! - [`config`]: [`DeliveryConfig`], every timing and limit, with spec defaults.
//! - [`policy`]: the pure retry policy (classification, backoff, decision)
//!   and the per-destination log-line budget.
//! - [`payload`]: stored event → webhook message (docs/webhook-payloads.md) → bytes.
//! - [`sender`]: the shared HTTP client (and per-destination-CA clients);
//!   one POST per URL, all URLs at once.
//! - `engine`: the dispatcher, destination cache, grouped report writer and
//!   the rate-limited process log of failures.
//! - [`alerts`]: operational alerts on failing destinations.
//! - [`error`]: the [`DeliveryError`] type.

pub mod alerts;
pub mod config;
mod engine;
pub mod error;
pub mod payload;
pub mod policy;
pub mod sender;

pub use config::DeliveryConfig;
pub use engine::{DeliveryEngine, EngineHandle, FirstAttempts, Hooks, Sent};
pub use error::DeliveryError;
