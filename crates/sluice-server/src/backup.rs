//! `sluice backup`: the embedded store copied online to a new file, with
//! the server's own configuration naming the database.

use std::path::Path;

use sluice_store::sqlite::BackupReport;

use crate::ServerError;
use crate::config::{Config, ConfigError, StorageBackend};

/// Copies the database `config` names to the new file `out`.
pub fn backup(config: &Config, out: &Path) -> Result<BackupReport, ServerError> {
    if config.storage.backend == StorageBackend::Postgres {
        return Err(ConfigError::Invalid {
            key: "storage.backend",
            why: "is \"postgres\": back up the database with PostgreSQL's own tools \
                  (pg_dump, base backups), see docs/postgres.md"
                .into(),
        }
        .into());
    }
    let db = config.sqlite_path();
    Ok(sluice_store::sqlite::backup(&db, out)?)
}
