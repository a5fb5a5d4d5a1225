//! Black-box tests: the real server on an ephemeral port, spoken to over HTTP.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failure panics with its message (clippy.toml allows it only inside #[test] functions)"
)]

mod admin;
mod alerts;
mod backlog;
mod blocking;
mod dashboard;
mod dashboard_forms;
mod dashboard_sessions;
mod dedup;
mod delivery_search;
mod filters;
mod health;
mod hostile;
mod ingest;
#[cfg(all(feature = "postgres-tests", feature = "kafka"))]
mod kafka;
mod lanes;
mod limits;
mod openapi;
mod operations;
mod outbound;
mod personas;
#[cfg(feature = "postgres-tests")]
mod postgres;
mod privacy;
mod receivers;
mod refusals;
mod schema;
mod signing_ca;
mod support;
#[cfg(feature = "postgres-tests")]
mod takeover;
mod team;
mod webhooks;
