//! Opening the store the configuration names.

use std::sync::Arc;

use sluice_store::Store;
use sluice_store::postgres::{PostgresConfig, PostgresStore};
use sluice_store::sqlite::{SqliteConfig, SqliteStore, Synchronous};

use crate::ServerError;
use crate::config::{self, Config, StorageBackend};

/// The opened store, kept concrete so that `run` can close it cleanly.
pub enum OpenStore {
    Sqlite(Arc<SqliteStore>),
    Postgres(Arc<PostgresStore>),
}

impl OpenStore {
    pub fn shared(&self) -> Arc<dyn Store> {
        match self {
            OpenStore::Sqlite(s) => s.clone(),
            OpenStore::Postgres(p) => p.clone(),
        }
    }

    /// Finishes queued writes and releases the database.
    pub async fn close(&self) {
        match self {
            OpenStore::Sqlite(s) => s.close().await,
            OpenStore::Postgres(p) => p.close().await,
        }
    }
}

/// Opens the store named by `config`.
pub async fn open_store(config: &Config) -> Result<OpenStore, ServerError> {
    match config.storage.backend {
        StorageBackend::Sqlite => {
            let mut sqlite = SqliteConfig::new(config.sqlite_path());
            sqlite.synchronous = match config.storage.synchronous.as_str() {
                "normal" => Synchronous::Normal,
                _ => Synchronous::Full,
            };
            sqlite.dedup_window = config.storage.dedup_window();
            sqlite.secure_delete = config.storage.secure_delete;
            Ok(OpenStore::Sqlite(Arc::new(
                SqliteStore::open(sqlite).await?,
            )))
        }
        StorageBackend::Postgres => {
            let url = config
                .storage
                .postgres_url
                .clone()
                .ok_or(config::ConfigError::Invalid {
                    key: "storage.postgres_url",
                    why: "is required when storage.backend = \"postgres\"".into(),
                })?;
            let mut pg = PostgresConfig::new(url);
            pg.pool_size = config.storage.postgres_pool_size;
            pg.schema = config.storage.postgres_schema.clone();
            pg.dedup_window = config.storage.dedup_window();
            Ok(OpenStore::Postgres(Arc::new(
                PostgresStore::open(pg).await?,
            )))
        }
    }
}
