//! Background upkeep: refreshing the routing table (changes made by other
//! nodes sharing the database), retention of delivered events, the
//! per-destination cap on pending deliveries, and flushing the in-memory
//! schema aggregate.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use sluice_api::RouteTable;
use sluice_store::Store;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use prometheus_client::metrics::counter::Counter;
use sluice_schema::Tracker;
use sluice_store::SchemaFlush;
use sluice_store::health::Tally;

use crate::config::{DeliverySettings, RetentionConfig, SchemaConfig};

/// How often the routing table is re-read from the store. Block rules and
/// destination filters ride in it and must reach every node within 1 s of
/// a change, so the refresh runs twice a second (a handful of small reads).
const ROUTES_REFRESH: Duration = Duration::from_millis(500);

/// The per-destination cap on pending deliveries, the metric counting the
/// deliveries it dead-lettered, and the health tally that counts them as
/// dead for their destination.
pub struct PendingCap {
    cap: u64,
    every: Duration,
    counter: Counter,
    tally: Option<Arc<Tally>>,
}

impl PendingCap {
    pub fn new(delivery: &DeliverySettings, counter: Counter, tally: Option<Arc<Tally>>) -> Self {
        PendingCap {
            cap: delivery.max_pending_per_destination,
            every: Duration::from_millis(delivery.pending_cap_interval_ms.max(1)),
            counter,
            tally,
        }
    }

    async fn enforce(&self, store: &dyn Store) {
        if self.cap == 0 {
            return;
        }
        let now = Utc::now();
        match store.cap_pending(self.cap, now).await {
            Ok(capped) if capped.is_empty() => {}
            Ok(capped) => {
                let n = capped.iter().map(|(_, n)| n).sum();
                if let Some(tally) = &self.tally {
                    for (destination, dead) in &capped {
                        tally.add(destination, now.timestamp_millis(), |h| {
                            h.counts.dead += dead;
                        });
                    }
                }
                self.counter.inc_by(n);
                tracing::warn!(
                    dead_lettered = n,
                    cap = self.cap,
                    "destinations over delivery.max_pending_per_destination: oldest pending deliveries dead-lettered"
                );
            }
            Err(e) => sluice_store::warn_every!(
                sluice_store::log_gate::BACKGROUND_EVERY,
                e,
                "enforcing the pending cap"
            ),
        }
    }
}

pub fn spawn(
    store: Arc<dyn Store>,
    routes: RouteTable,
    retention: &RetentionConfig,
    cap: PendingCap,
    mut stop: watch::Receiver<bool>,
) -> JoinHandle<()> {
    let keep = (retention.events_hours > 0)
        .then(|| chrono::Duration::hours(retention.events_hours as i64));
    let every = Duration::from_secs(retention.interval_secs);
    tokio::spawn(async move {
        let mut refresh = tokio::time::interval(ROUTES_REFRESH);
        let mut prune = tokio::time::interval(every);
        let mut capping = tokio::time::interval(cap.every);
        loop {
            tokio::select! {
                changed = stop.changed() => {
                    if changed.is_err() || *stop.borrow() {
                        return;
                    }
                }
                _ = refresh.tick() => {
                    if let Err(e) = routes.reload().await {
                        sluice_store::warn_every!(sluice_store::log_gate::BACKGROUND_EVERY, e, "refreshing routing table");
                    }
                }
                _ = capping.tick() => cap.enforce(store.as_ref()).await,
                _ = prune.tick() => {
                    let Some(keep) = keep else { continue };
                    match store.prune(Utc::now() - keep).await {
                        Ok(0) => {}
                        Ok(n) => tracing::info!(events = n, "retention pruned delivered events"),
                        Err(e) => sluice_store::warn_every!(sluice_store::log_gate::BACKGROUND_EVERY, e, "retention"),
                    }
                }
            }
        }
    })
}

/// Writes the schema aggregate every `flush_interval_ms`, and once more when
/// stopping. A flush that fails is logged and its counts are lost: at most
/// one interval of schema counts, never an event. Counts of a source deleted
/// in the meantime are dropped.
pub fn spawn_schema_flush(
    store: Arc<dyn Store>,
    tracker: Arc<Tracker>,
    config: &SchemaConfig,
    mut stop: watch::Receiver<bool>,
) -> JoinHandle<()> {
    let every = Duration::from_millis(config.flush_interval_ms);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                changed = stop.changed() => {
                    if changed.is_err() || *stop.borrow() {
                        flush_schema(store.as_ref(), &tracker).await;
                        return;
                    }
                }
                _ = tick.tick() => flush_schema(store.as_ref(), &tracker).await,
            }
        }
    })
}

async fn flush_schema(store: &dyn Store, tracker: &Tracker) {
    let cap = tracker.max_entries() as u64;
    for (source_id, delta) in tracker.take() {
        // A source deleted since these calls were observed takes its schema
        // with it: its pending counts are not written back.
        if let Ok(None) = store.get_source(&source_id).await {
            continue;
        }
        let entries = delta
            .entries
            .into_iter()
            .map(|e| sluice_store::SchemaEntryDelta {
                kind: e.kind.as_str().to_owned(),
                name: e.name,
                property: e.property,
                types: i64::from(e.types),
                count: e.count,
                first_seen_ms: e.first_ms,
                last_seen_ms: e.last_ms,
            })
            .collect();
        let flush = SchemaFlush {
            source_id,
            entries,
            overflow: delta.overflow,
            max_entries: cap,
            now: Utc::now(),
        };
        if let Err(e) = store.flush_schema(flush).await {
            sluice_store::warn_every!(
                sluice_store::log_gate::BACKGROUND_EVERY,
                e,
                "writing the source schema; this interval's counts are lost"
            );
        }
    }
}
