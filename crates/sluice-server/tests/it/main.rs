//! Black-box tests: the real server on an ephemeral port, spoken to over HTTP.

mod admin;
mod backlog;
mod dashboard;
mod ingest;
mod limits;
mod operations;
mod outbound;
#[cfg(feature = "postgres-tests")]
mod postgres;
mod receivers;
mod signing_ca;
mod support;
mod webhooks;
