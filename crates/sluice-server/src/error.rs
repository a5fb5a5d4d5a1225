//! [`ServerError`]: why the server could not start or stopped abnormally.

use crate::{bootstrap, config};

/// Why the server could not start or stopped abnormally.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error(transparent)]
    Config(#[from] config::ConfigError),
    #[error("store: {0}")]
    Store(#[from] sluice_store::StoreError),
    #[error(transparent)]
    Bootstrap(#[from] bootstrap::BootstrapError),
    #[error("delivery: {0}")]
    Delivery(#[from] sluice_delivery::DeliveryError),
    #[error("serving HTTP: {0}")]
    Io(#[from] std::io::Error),
    #[cfg(feature = "kafka")]
    #[error("event log: {0}")]
    Log(#[from] sluice_log::LogError),
    #[error("backup: {0}")]
    Backup(#[from] sluice_store::sqlite::BackupError),
}
