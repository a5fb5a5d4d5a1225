//! Black-box tests: the real server on an ephemeral port, spoken to over HTTP.

mod admin;
mod hostile;
mod ingest;
mod limits;
mod operations;
#[cfg(feature = "postgres-tests")]
mod postgres;
mod receivers;
mod support;
mod webhooks;
