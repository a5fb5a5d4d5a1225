//! Tests of the `sluice` binary as a process: crash durability, signals,
//! first start; and the operator commands that talk to a running server.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failure panics with its message (clippy.toml allows it only inside #[test] functions)"
)]

mod process;

mod backup;
mod cli;
mod config;
mod dns;
mod durability;
mod failure_log;
mod hostile;
#[cfg(feature = "kafka")]
mod kafka;
mod lifecycle;
mod partitions;
mod personas;
mod regulation_crash;
mod secrets;
