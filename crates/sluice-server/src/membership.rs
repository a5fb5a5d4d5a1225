//! This node's heartbeat in the store's membership ([`ClusterStore`]), and
//! the live node count handed to the delivery engine, which splits
//! `concurrency_per_destination` among the nodes.
//!
//! A node beats every [`HEARTBEAT`]; one silent for [`TTL`] (killed, cut
//! off) drops out, and the others take its share back at their next beat.
//! A node stopping cleanly leaves at once. On the embedded store the node is
//! always alone and nothing is written.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use sluice_delivery::EngineHandle;
use sluice_store::{ClusterStore, Store, keys};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How often a node says it is alive.
pub const HEARTBEAT: Duration = Duration::from_secs(2);

/// How long a node is counted after its last heartbeat.
pub const TTL: Duration = Duration::from_secs(10);

/// Starts the heartbeat; it leaves the membership when `stop` turns true.
pub fn spawn(
    store: Arc<dyn Store>,
    engine: EngineHandle,
    mut stop: watch::Receiver<bool>,
) -> JoinHandle<()> {
    let node = keys::new_id("node");
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(HEARTBEAT);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut counted = 0;
        loop {
            tokio::select! {
                changed = stop.changed() => {
                    if changed.is_err() || *stop.borrow() {
                        break;
                    }
                }
                _ = tick.tick() => match store.heartbeat(&node, Utc::now(), TTL).await {
                    Ok(live) => {
                        if live.len() != counted {
                            counted = live.len();
                            tracing::info!(nodes = counted, node = %node, "nodes delivering from this store");
                        }
                        engine.set_nodes(counted);
                    }
                    Err(e) => sluice_store::warn_every!(
                        sluice_store::log_gate::BACKGROUND_EVERY,
                        e,
                        "node heartbeat failed"
                    ),
                },
            }
        }
        if let Err(e) = ClusterStore::leave(store.as_ref(), &node).await {
            tracing::warn!(error = %e, "leaving the node membership");
        }
    })
}
