//! End-to-end tests of the delivery engine: a real SQLite store, real local
//! receivers, the real engine, with short timings so the suite runs in seconds.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failure panics with its message (clippy.toml allows it only inside #[test] functions)"
)]

mod deliverable;
mod echo;
mod fuzz;
mod guard;
mod headers;
mod isolation;
mod keepalive;
mod outcomes;
mod private_ca;
mod restart;
mod retries;
mod shapes;
mod support;
mod tls;
mod window;
