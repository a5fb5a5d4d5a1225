//! The Sluice server: configuration, start-up, shutdown, and the wiring of
//! store → API → delivery, and the profile engine.
//!
//! Modules:
//! - [`config`]: layered configuration (defaults, TOML file, `SLUICE_*`).
//! - [`bootstrap`]: sources and destinations declared in a file.
//! - [`admin_token`]: the admin token, configured or generated once.
//! - [`tasks`]: background upkeep (routing refresh, retention).
//! - [`audit_prune`]: the audit log's retention.
//! - [`delivery_metrics`]: the delivery engine's counters on `/metrics`.
//! - [`health`]: the delivery health tally merged into the store, pruned.
//! - [`membership`]: this node's heartbeat, and the live node count that
//!   splits per-destination concurrency.
//! - [`serve`]: the HTTP accept loop with its timeouts, connection cap and
//!   bounded shutdown.
//! - [`rlimit`]: the open-file limit.
//! - [`privacy`]: the suppression sync and the regulation job.
//! - [`backup`]: `sluice backup`, the embedded store copied online.
//! - `run`: start-up, the wiring, serving and shutdown ([`run`]).
//!
//! [`run`] is what the `sluice` binary calls and what tests call, on a
//! listener bound to port 0.

pub mod admin_token;
pub mod alerts;
pub mod audit_prune;
pub mod backup;
pub mod bootstrap;
pub mod config;
pub mod delivery_metrics;
mod error;
pub mod health;
#[cfg(feature = "kafka")]
mod kafka;
pub mod log_metrics;
pub mod membership;
pub mod privacy;
mod profile_metrics;
pub mod rlimit;
mod run;
pub mod serve;
pub mod tasks;

pub use config::Config;
pub use error::ServerError;
pub(crate) use run::wait_for;
pub use run::{
    Announce, JsonStderrAnnounce, OpenStore, StderrAnnounce, open_store, run, serve_options,
};
