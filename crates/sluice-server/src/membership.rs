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
//!
//! Silence means death only while this node's own beats get through. When
//! they failed too (the database was out of reach, restarting or failing
//! over), the others' beats failed alike and their rows went stale while
//! they kept sending; releasing their leases then would send all they hold
//! a second time. So after a gap in its own beats a node counts nobody as
//! gone for one [`TTL`]: a node still silent after that has gone after all.

use std::sync::Arc;
use std::time::{Duration, Instant};

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

/// A gap between this node's own successful beats longer than this means
/// they failed meanwhile (see the module notes). Another node's row goes
/// stale only after a [`TTL`] without a beat, so an outage that stales it
/// leaves a gap here of nearly a TTL; half of one is well clear of a slow
/// beat or two.
const MISSED: Duration = Duration::from_secs(4);

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
        let mut watch = Watch::default();
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
                        for gone in watch.beat(&live, Instant::now()) {
                            released += release(store.as_ref(), &gone).await;
                        }
                        if released > 0 {
                            engine.notify();
                        }
                        if watch.counted() != counted {
                            counted = watch.counted();
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

/// Which counted nodes have gone, beat after beat. Pure: the caller brings
/// the time and what the store answered.
#[derive(Debug, Default)]
struct Watch {
    /// The nodes counted at the last beat (during a quiet period, every
    /// node heard from since it began).
    seen: Vec<String>,
    /// When this node's last beat reached the store.
    last_ok: Option<Instant>,
    /// Until then nobody counts as gone: this node's own beats failed just
    /// before (see the module notes).
    quiet_until: Option<Instant>,
}

impl Watch {
    /// Takes a beat's answer (`live`, the nodes heard from within [`TTL`])
    /// at `now`; returns the nodes gone since the last beat, whose leases
    /// are to be released.
    fn beat(&mut self, live: &[String], now: Instant) -> Vec<String> {
        if self
            .last_ok
            .is_some_and(|last| now.saturating_duration_since(last) > MISSED)
        {
            self.quiet_until = Some(now + TTL);
        }
        self.last_ok = Some(now);
        if self.quiet_until.is_some_and(|until| now < until) {
            for id in live {
                if !self.seen.contains(id) {
                    self.seen.push(id.clone());
                }
            }
            return Vec::new();
        }
        self.quiet_until = None;
        let gone = vanished(&self.seen, live).map(str::to_owned).collect();
        self.seen = live.to_vec();
        gone
    }

    /// The nodes sharing the work: those counted at the last beat.
    fn counted(&self) -> usize {
        self.seen.len()
    }
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
    fn a_node_that_stops_beating_is_released_at_the_next_beat() {
        let start = Instant::now();
        let mut watch = Watch::default();
        assert!(watch.beat(&ids(&["a", "b"]), start).is_empty());
        let second = start + HEARTBEAT;
        assert_eq!(watch.beat(&ids(&["a"]), second), ids(&["b"]));
        assert_eq!(watch.counted(), 1);
    }

    #[test]
    fn back_from_a_gap_in_its_own_beats_a_node_releases_no_one_for_a_ttl() {
        let start = Instant::now();
        let mut watch = Watch::default();
        watch.beat(&ids(&["a", "b"]), start);
        // The database was gone for 12 s: b's row is stale, as a's was.
        let back = start + Duration::from_secs(12);
        assert!(watch.beat(&ids(&["a"]), back).is_empty(), "b released");
        assert_eq!(watch.counted(), 2, "b still shares the work");
        // b beats again: nothing to release, ever.
        let later = back + HEARTBEAT;
        assert!(watch.beat(&ids(&["a", "b"]), later).is_empty());
        let after = back + TTL + HEARTBEAT;
        assert!(watch.beat(&ids(&["a", "b"]), after).is_empty());
        assert_eq!(watch.counted(), 2);
    }

    #[test]
    fn a_node_silent_for_a_ttl_after_the_gap_has_gone_after_all() {
        let start = Instant::now();
        let mut watch = Watch::default();
        watch.beat(&ids(&["a", "b"]), start);
        let back = start + Duration::from_secs(12);
        let mut t = back;
        while t < back + TTL {
            assert!(watch.beat(&ids(&["a"]), t).is_empty());
            t += HEARTBEAT;
        }
        assert_eq!(watch.beat(&ids(&["a"]), t), ids(&["b"]));
        assert_eq!(watch.counted(), 1);
    }

    #[test]
    fn a_node_no_longer_counted_has_vanished_and_a_new_one_has_not() {
        let before = ids(&["a", "b", "c"]);
        let live = ids(&["a", "c", "d"]);
        assert_eq!(vanished(&before, &live).collect::<Vec<_>>(), vec!["b"]);
        assert_eq!(vanished(&[], &live).count(), 0, "nothing seen yet");
    }
}
