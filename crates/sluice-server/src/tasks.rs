//! Background upkeep: refreshing the routing table (changes made by other
//! nodes sharing the database) and retention of delivered events.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use sluice_api::RouteTable;
use sluice_store::Store;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::config::RetentionConfig;

/// How often the routing table is re-read from the store.
const ROUTES_REFRESH: Duration = Duration::from_secs(5);

pub fn spawn(
    store: Arc<dyn Store>,
    routes: RouteTable,
    retention: &RetentionConfig,
    mut stop: watch::Receiver<bool>,
) -> JoinHandle<()> {
    let keep = (retention.events_hours > 0)
        .then(|| chrono::Duration::hours(retention.events_hours as i64));
    let every = Duration::from_secs(retention.interval_secs);
    tokio::spawn(async move {
        let mut refresh = tokio::time::interval(ROUTES_REFRESH);
        let mut prune = tokio::time::interval(every);
        loop {
            tokio::select! {
                changed = stop.changed() => {
                    if changed.is_err() || *stop.borrow() {
                        return;
                    }
                }
                _ = refresh.tick() => {
                    if let Err(e) = routes.reload().await {
                        tracing::warn!(error = %e, "refreshing routing table");
                    }
                }
                _ = prune.tick() => {
                    let Some(keep) = keep else { continue };
                    match store.prune(Utc::now() - keep).await {
                        Ok(0) => {}
                        Ok(n) => tracing::info!(events = n, "retention pruned delivered events"),
                        Err(e) => tracing::warn!(error = %e, "retention"),
                    }
                }
            }
        }
    })
}
