//! Pruning the audit log: every `audit.prune_interval_secs`, entries older
//! than `audit.retention_days` are deleted, `audit.prune_batch` per
//! transaction until none is left, so pruning never holds the store long.
//! Regulations' entries are kept ([`sluice_store::AuditStore::prune_audit`]).
//! Every node prunes; two nodes pruning at once delete different batches
//! or nothing.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use sluice_store::Store;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::config::AuditConfig;

/// Starts the pruning loop; `None` when the log is kept forever.
pub fn spawn(
    store: Arc<dyn Store>,
    config: &AuditConfig,
    mut stop: watch::Receiver<bool>,
) -> Option<JoinHandle<()>> {
    if config.retention_days == 0 {
        return None;
    }
    let keep = chrono::Duration::days(i64::try_from(config.retention_days).unwrap_or(i64::MAX / 2));
    let batch = config.prune_batch.max(1);
    let every = Duration::from_secs(config.prune_interval_secs);
    Some(tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        loop {
            tokio::select! {
                changed = stop.changed() => {
                    if changed.is_err() || *stop.borrow() {
                        return;
                    }
                }
                _ = tick.tick() => prune(store.as_ref(), keep, batch, &stop).await,
            }
        }
    }))
}

/// Deletes entries older than `keep`, `batch` at a time, until a batch
/// comes back short or the server stops.
pub async fn prune(
    store: &dyn Store,
    keep: chrono::Duration,
    batch: usize,
    stop: &watch::Receiver<bool>,
) {
    let older_than = Utc::now() - keep;
    let mut total = 0u64;
    loop {
        match store.prune_audit(older_than, batch).await {
            Ok(n) => {
                total += n;
                if (n as usize) < batch || *stop.borrow() {
                    break;
                }
            }
            Err(e) => {
                sluice_store::warn_every!(
                    sluice_store::log_gate::BACKGROUND_EVERY,
                    e,
                    "pruning the audit log"
                );
                break;
            }
        }
        // Let other writers in between batches.
        tokio::task::yield_now().await;
    }
    if total > 0 {
        tracing::info!(entries = total, "pruned the audit log");
    }
}
