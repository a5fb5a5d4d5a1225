//! This node's heartbeat in the store's membership ([`ClusterStore`]), and
//! the live node count handed to the delivery engine, which splits
//! `concurrency_per_destination` among the nodes.
//!
//! A node beats every [`HEARTBEAT`]; one silent for [`TTL`] (killed, cut
//! off) drops out, and the others take its share back at their next beat.
//! A node stopping cleanly leaves once its delivery engine has finished
//! (its sends ended and their outcomes written), so the others release only
//! what it never sent. On the embedded store the node is always alone and
//! nothing is written.
//!
//! When a node drops out, each node that counted it releases its delivery
//! leases ([`ClusterStore::release_leases`]) and wakes its delivery engine:
//! a killed node's deliveries are sent again within [`TTL`] plus one beat
//! of the kill (9 s), not when their leases end.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use sluice_delivery::EngineHandle;
use sluice_store::{ClusterStore, Store};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How often a node says it is alive: one row update a second per node.
pub const HEARTBEAT: Duration = Duration::from_secs(1);

/// How long a node is counted after its last heartbeat. A killed node's
/// deliveries wait at most this plus one [`HEARTBEAT`] (the others' next
/// beat), inside the 10 s a takeover may take; a live node drops out only
/// when its heartbeats fail for 7 s in a row.
pub const TTL: Duration = Duration::from_secs(8);

/// Starts the heartbeat; it leaves the membership when `stop` turns true,
/// which the caller sends after the delivery engine has stopped.
pub fn spawn(
    store: Arc<dyn Store>,
    engine: EngineHandle,
    mut stop: watch::Receiver<bool>,
) -> JoinHandle<()> {
    let node = store.node_id().to_owned();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(HEARTBEAT);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut counted = 0;
        let mut seen: Vec<String> = Vec::new();
        loop {
            tokio::select! {
                changed = stop.changed() => {
                    if changed.is_err() || *stop.borrow() {
                        break;
                    }
                }
                _ = tick.tick() => match store.heartbeat(&node, Utc::now(), TTL).await {
                    Ok(live) => {
                        let mut released = 0;
                        for gone in vanished(&seen, &live) {
                            released += release(store.as_ref(), gone).await;
                        }
                        if released > 0 {
                            engine.notify();
                        }
                        seen.clone_from(&live);
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

/// The nodes counted at the last beat that this one no longer counts.
fn vanished<'a>(before: &'a [String], live: &[String]) -> impl Iterator<Item = &'a str> {
    before
        .iter()
        .filter(|id| !live.contains(id))
        .map(String::as_str)
}

/// Releases a vanished node's leases and returns how many; a failure is
/// logged and the leases then end on their own.
async fn release(store: &dyn Store, node: &str) -> u64 {
    match store.release_leases(node, Utc::now()).await {
        Ok(0) => 0,
        Ok(released) => {
            tracing::info!(
                node,
                released,
                "released the delivery leases of a node that dropped out"
            );
            released
        }
        Err(e) => {
            tracing::warn!(node, error = %e, "releasing the leases of a node that dropped out; they end on their own");
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_node_no_longer_counted_has_vanished_and_a_new_one_has_not() {
        let before = ids(&["a", "b", "c"]);
        let live = ids(&["a", "c", "d"]);
        assert_eq!(vanished(&before, &live).collect::<Vec<_>>(), vec!["b"]);
        assert_eq!(vanished(&[], &live).count(), 0, "nothing seen yet");
    }
}
