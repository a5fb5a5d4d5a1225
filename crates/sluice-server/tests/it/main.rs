//! Black-box tests: the real server on an ephemeral port, spoken to over HTTP.

mod admin;
mod blocking;
mod filters;
mod ingest;
mod limits;
mod operations;
#[cfg(feature = "postgres-tests")]
mod postgres;
mod receivers;
mod schema;
mod support;
mod webhooks;
