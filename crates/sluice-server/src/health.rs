//! Delivery health: this node's tally merged into the store every
//! `delivery.health_flush_ms`, and buckets older than a week and a day
//! pruned every hour (docs/delivery.md, "Delivery health").
//!
//! A merge that fails is put back into the tally and tried with the next
//! one; what `kill -9` loses is what was counted since the last merge.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use sluice_store::Store;
use sluice_store::health::{KEEP_MS, Tally};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How often old buckets are pruned.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);

/// Merges `tally` into `store` every `every` until `stop`; the last merge
/// is the caller's ([`flush`]), once delivery has stopped counting.
pub fn spawn(
    store: Arc<dyn Store>,
    tally: Arc<Tally>,
    every: Duration,
    mut stop: watch::Receiver<bool>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut prune = tokio::time::interval(PRUNE_EVERY);
        prune.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                changed = stop.changed() => {
                    if changed.is_err() || *stop.borrow() {
                        return;
                    }
                }
                _ = tick.tick() => flush(store.as_ref(), &tally).await,
                _ = prune.tick() => {
                    let before = Utc::now().timestamp_millis() - KEEP_MS;
                    if let Err(e) = store.prune_health(before).await {
                        sluice_store::warn_every!(
                            sluice_store::log_gate::BACKGROUND_EVERY,
                            e,
                            "pruning old delivery health buckets"
                        );
                    }
                }
            }
        }
    })
}

/// Writes what `tally` holds; on failure puts it back for the next merge.
pub async fn flush(store: &dyn Store, tally: &Tally) {
    let deltas = tally.take();
    if deltas.is_empty() {
        return;
    }
    if let Err(e) = store.add_health(tally.shard(), deltas.clone()).await {
        sluice_store::warn_every!(
            sluice_store::log_gate::BACKGROUND_EVERY,
            e,
            "writing delivery health; its counts wait for the next merge"
        );
        tally.restore(deltas);
    }
}
