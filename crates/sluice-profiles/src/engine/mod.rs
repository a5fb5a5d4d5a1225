//! The profile engine: one task per node; the node holding the lease reads
//! committed events through the durable cursor, sweeps due windows and
//! advances jobs, each step committed in one transaction (see
//! [`sluice_store::ProfileStore`]).
//!
//! - `defs`: live definitions in evaluation order.
//! - `events`: identity resolution and the per-batch step.
//! - `diff`: values → changes → identify messages.
//! - `sweep`: window expiry and whole-population jobs.

mod defs;
mod diff;
mod events;
mod sweep;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use sluice_store::Store;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

pub use defs::Defs;

/// Tuning of the engine (`[personas]` in the server's configuration).
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// This node's lease owner name; unique per process.
    pub node_id: String,
    /// How often an idle engine looks for events, due windows and jobs;
    /// also the granularity of window expiry.
    pub poll_interval: Duration,
    /// How long a lease lasts without renewal; a dead node's work moves to
    /// another node after this.
    pub lease_ttl: Duration,
    /// Events read per step.
    pub batch: u32,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            node_id: format!("node-{}", uuid::Uuid::new_v4().simple()),
            poll_interval: Duration::from_millis(200),
            lease_ttl: Duration::from_secs(15),
            batch: 500,
        }
    }
}

/// Wakes the engine early (after an ingest commit or a definition change).
#[derive(Clone, Default)]
pub struct EngineHandle {
    wake: Arc<Notify>,
}

impl EngineHandle {
    pub fn notify(&self) {
        self.wake.notify_one();
    }
}

/// Starts the engine. `on_emit` runs after a step put messages in the outbox
/// (the server wakes delivery). The task ends, releasing the lease, when
/// `stop` completes.
pub fn start(
    store: Arc<dyn Store>,
    config: EngineConfig,
    on_emit: Arc<dyn Fn() + Send + Sync>,
    stop: impl Future<Output = ()> + Send + 'static,
) -> (EngineHandle, JoinHandle<()>) {
    let handle = EngineHandle::default();
    let wake = handle.wake.clone();
    let task = tokio::spawn(async move {
        tokio::pin!(stop);
        loop {
            let busy = match tick(store.as_ref(), &config, &on_emit).await {
                Ok(busy) => busy,
                Err(e) => {
                    tracing::warn!(error = %e, "profile engine step failed; retrying");
                    false
                }
            };
            if busy {
                tokio::select! {
                    () = &mut stop => break,
                    () = tokio::task::yield_now() => {}
                }
                continue;
            }
            tokio::select! {
                () = &mut stop => break,
                () = wake.notified() => {}
                () = tokio::time::sleep(config.poll_interval) => {}
            }
        }
        if let Err(e) = store.release_profile_lease(&config.node_id).await {
            tracing::warn!(error = %e, "releasing the profile lease");
        }
    });
    (handle, task)
}

/// One round: take or renew the lease, then events, due windows, one job
/// page. Returns whether any work was done.
async fn tick(
    store: &dyn Store,
    config: &EngineConfig,
    on_emit: &Arc<dyn Fn() + Send + Sync>,
) -> Result<bool, crate::error::ProfileError> {
    let now = sluice_now();
    let Some(cursor) = store
        .take_profile_lease(&config.node_id, now, config.lease_ttl)
        .await?
    else {
        return Ok(false);
    };
    let defs = Defs::new(store.list_computations().await?);
    let batch = store.profile_events_after(cursor, config.batch).await?;
    let mut busy = !batch.is_empty();
    if busy {
        events::step(store, &config.node_id, &defs, batch, now).await?;
    }
    busy |= sweep::sweep(store, &config.node_id, &defs, now).await?;
    busy |= sweep::job(store, &config.node_id, now).await?;
    if busy {
        on_emit();
    }
    Ok(busy)
}

/// Whole milliseconds, as the store keeps times.
fn sluice_now() -> chrono::DateTime<chrono::Utc> {
    let t = chrono::Utc::now();
    chrono::DateTime::from_timestamp_millis(t.timestamp_millis()).unwrap_or(t)
}
