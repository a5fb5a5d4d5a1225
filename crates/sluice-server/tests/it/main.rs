//! Black-box tests: the real server on an ephemeral port, spoken to over HTTP.

mod admin;
mod ingest;
mod limits;
mod operations;
mod personas;
#[cfg(feature = "postgres-tests")]
mod postgres;
mod privacy;
mod receivers;
mod support;
mod webhooks;
