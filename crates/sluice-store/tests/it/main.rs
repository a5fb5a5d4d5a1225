//! Integration tests of the SQLite backend: the shared conformance suite and
//! the SQLite-specific behaviour (files, reopening, migrations, grouping).

#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "postgres")]
mod postgres_dedup;
mod sqlite;
mod sqlite_backup;

mod conformance {
    sluice_store::conformance_tests!(crate::sqlite::fresh());
}
