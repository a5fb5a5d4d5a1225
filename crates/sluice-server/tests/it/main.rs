//! Black-box tests: the real server on an ephemeral port, spoken to over HTTP.

mod admin;
mod backlog;
mod blocking;
mod dashboard;
mod dashboard_forms;
mod dedup;
mod filters;
mod hostile;
mod ingest;
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
mod schema;
mod signing_ca;
mod support;
mod webhooks;
