//! Integration tests of the store: the conformance suite every backend must
//! pass (`conformance/`, run on SQLite and, with the `postgres` feature, on
//! PostgreSQL), then what is particular to each backend: SQLite's files,
//! reopening, migrations and grouping; PostgreSQL's several nodes.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failure panics with its message (clippy.toml allows it only inside #[test] functions)"
)]

mod conformance;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "postgres")]
mod postgres_dedup;
mod sqlite;
mod sqlite_backup;
mod sqlite_purge_bytes;
mod whole_engine;
