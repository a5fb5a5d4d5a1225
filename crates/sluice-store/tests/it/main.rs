//! Integration tests of the SQLite backend: the shared conformance suite and
//! the SQLite-specific behaviour (files, reopening, migrations, grouping).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failure panics with its message (clippy.toml allows it only inside #[test] functions)"
)]

#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "postgres")]
mod postgres_dedup;
mod sqlite;
mod sqlite_backup;

mod conformance {
    sluice_store::conformance_tests!(crate::sqlite::fresh());
    sluice_store::team_conformance_tests!(crate::sqlite::fresh());
}
