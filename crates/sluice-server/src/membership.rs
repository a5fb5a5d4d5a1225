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
//! When a node falls silent, each live node releases its delivery leases
//! ([`ClusterStore::release_leases`]) and wakes its delivery engine: a
//! killed node's deliveries are sent again within [`TTL`] plus one beat of
//! the kill (9 s), not when their leases end. That includes a node killed
//! before this one started, as when a lone node is restarted: its old row
//! is silent, and its leases are released one [`TTL`] after the start.
//!
//! Silence means death only while this node's own beats get through. When
//! they failed too (the database was out of reach, restarting or failing
//! over), the others' beats failed alike and their rows went stale while
//! they kept sending; releasing their leases then would send all they hold
//! a second time. So after a gap in its own beats, and in its first
//! [`TTL`] (it may start just as the database comes back), a node counts
//! nobody as gone: a node still silent after that has gone after all.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use sluice_delivery::EngineHandle;
use sluice_store::{ClusterStore, Members, Store};
use tokio::sync::{mpsc, watch};
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
        // Releases run beside the beats (a release walks the due
        // deliveries, which a backlog makes long); those that failed come
        // back here and are tried again at the next beat.
        let (failed_tx, mut failed) = mpsc::unbounded_channel::<Vec<String>>();
        loop {
            tokio::select! {
                changed = stop.changed() => {
                    if changed.is_err() || *stop.borrow() {
                        break;
                    }
                }
                _ = tick.tick() => match store.heartbeat(&node, TTL).await {
                    Ok(members) => {
                        while let Ok(nodes) = failed.try_recv() {
                            watch.not_released(&nodes);
                        }
                        let gone = watch.beat(&members, Instant::now());
                        if !gone.is_empty() {
                            let (store, engine) = (Arc::clone(&store), engine.clone());
                            let failed_tx = failed_tx.clone();
                            tokio::spawn(async move {
                                match release(store.as_ref(), &gone).await {
                                    Some(0) => {}
                                    Some(_) => engine.notify(),
                                    None => {
                                        let _ = failed_tx.send(gone);
                                    }
                                }
                            });
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

/// Which nodes have gone, beat after beat. Pure: the caller brings the
/// time and what the store answered.
#[derive(Debug, Default)]
struct Watch {
    /// The nodes counted at the last beat (during a quiet period, every
    /// node heard from since it began).
    seen: Vec<String>,
    /// Silent nodes whose leases were released, until they beat again.
    released: Vec<String>,
    /// When this node's last beat reached the store.
    last_ok: Option<Instant>,
    /// Until then nobody counts as gone: this node has just started, or its
    /// own beats failed just before (see the module notes).
    quiet_until: Option<Instant>,
}

impl Watch {
    /// Takes a beat's answer at `now`; returns the nodes gone since the
    /// last beat, whose leases are to be released.
    fn beat(&mut self, members: &Members, now: Instant) -> Vec<String> {
        let missed = self
            .last_ok
            .is_none_or(|last| now.saturating_duration_since(last) > MISSED);
        if missed {
            self.quiet_until = Some(now + TTL);
        }
        self.last_ok = Some(now);
        if self.quiet_until.is_some_and(|until| now < until) {
            for id in &members.live {
                if !self.seen.contains(id) {
                    self.seen.push(id.clone());
                }
            }
            return Vec::new();
        }
        self.quiet_until = None;
        let before = std::mem::replace(&mut self.seen, members.live.clone());
        self.released.retain(|id| members.silent.contains(id));
        // Silent rows, and nodes counted last time whose row is gone (they
        // left cleanly, and may have stopped sends their grace cut short).
        let left = (before.into_iter())
            .filter(|id| !members.live.contains(id) && !members.silent.contains(id));
        let silent = (members.silent.iter())
            .filter(|id| !self.released.contains(id))
            .cloned();
        let gone: Vec<String> = silent.chain(left).collect();
        self.released.extend(
            (gone.iter())
                .filter(|id| members.silent.contains(id))
                .cloned(),
        );
        gone
    }

    /// Takes back the release of `gone`, which failed: the silent ones are
    /// released at the next beat instead.
    fn not_released(&mut self, gone: &[String]) {
        self.released.retain(|id| !gone.contains(id));
    }

    /// The nodes sharing the work: those counted at the last beat.
    fn counted(&self) -> usize {
        self.seen.len()
    }
}

/// Releases the leases of the nodes `gone`, in one statement, and returns
/// how many; `None` when that failed (it is logged).
async fn release(store: &dyn Store, gone: &[String]) -> Option<u64> {
    match store.release_leases(gone, Utc::now()).await {
        Ok(0) => Some(0),
        Ok(released) => {
            tracing::info!(
                nodes = ?gone,
                released,
                "released the delivery leases of nodes that dropped out"
            );
            Some(released)
        }
        Err(e) => {
            tracing::warn!(nodes = ?gone, error = %e, "releasing the leases of nodes that dropped out; trying again at the next beat");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(live: &[&str], silent: &[&str]) -> Members {
        let ids = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect();
        Members {
            live: ids(live),
            silent: ids(silent),
        }
    }

    fn ids(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    /// A watch one TTL past its start, having counted `live`.
    fn started(live: &[&str], start: Instant) -> Watch {
        let mut watch = Watch::default();
        let mut t = start;
        while t <= start + TTL {
            assert!(watch.beat(&members(live, &[]), t).is_empty());
            t += HEARTBEAT;
        }
        watch
    }

    #[test]
    fn a_node_that_stops_beating_is_released_at_the_next_beat_and_once() {
        let start = Instant::now();
        let mut watch = started(&["a", "b"], start);
        let t = start + TTL + 2 * HEARTBEAT;
        assert_eq!(watch.beat(&members(&["a"], &["b"]), t), ids(&["b"]));
        assert_eq!(watch.counted(), 1);
        let next = t + HEARTBEAT;
        assert!(watch.beat(&members(&["a"], &["b"]), next).is_empty());
    }

    #[test]
    fn a_node_silent_since_before_the_start_is_released_a_ttl_after_it() {
        let start = Instant::now();
        let mut watch = Watch::default();
        let mut t = start;
        while t < start + TTL {
            assert!(watch.beat(&members(&["a"], &["old"]), t).is_empty());
            t += HEARTBEAT;
        }
        assert_eq!(watch.beat(&members(&["a"], &["old"]), t), ids(&["old"]));
        assert_eq!(watch.counted(), 1, "a silent node never shares the work");
    }

    #[test]
    fn a_node_that_beats_again_and_falls_silent_again_is_released_again() {
        let start = Instant::now();
        let mut watch = started(&["a", "b"], start);
        let mut t = start + TTL + 2 * HEARTBEAT;
        assert_eq!(watch.beat(&members(&["a"], &["b"]), t), ids(&["b"]));
        t += HEARTBEAT;
        assert!(watch.beat(&members(&["a", "b"], &[]), t).is_empty());
        assert_eq!(watch.counted(), 2);
        t += HEARTBEAT;
        assert_eq!(watch.beat(&members(&["a"], &["b"]), t), ids(&["b"]));
    }

    #[test]
    fn back_from_a_gap_in_its_own_beats_a_node_releases_no_one_for_a_ttl() {
        let start = Instant::now();
        let mut watch = started(&["a", "b"], start);
        // The database was gone for 12 s: b's row is stale, as a's was.
        let back = start + TTL + Duration::from_secs(12);
        assert!(
            watch.beat(&members(&["a"], &["b"]), back).is_empty(),
            "b released"
        );
        assert_eq!(watch.counted(), 2, "b still shares the work");
        // b beats again: nothing to release, ever.
        let later = back + HEARTBEAT;
        assert!(watch.beat(&members(&["a", "b"], &[]), later).is_empty());
        let after = back + TTL + HEARTBEAT;
        assert!(watch.beat(&members(&["a", "b"], &[]), after).is_empty());
        assert_eq!(watch.counted(), 2);
    }

    #[test]
    fn a_node_silent_for_a_ttl_after_the_gap_has_gone_after_all() {
        let start = Instant::now();
        let mut watch = started(&["a", "b"], start);
        let back = start + TTL + Duration::from_secs(12);
        let mut t = back;
        while t < back + TTL {
            assert!(watch.beat(&members(&["a"], &["b"]), t).is_empty());
            t += HEARTBEAT;
        }
        assert_eq!(watch.beat(&members(&["a"], &["b"]), t), ids(&["b"]));
        assert_eq!(watch.counted(), 1);
    }

    #[test]
    fn a_node_that_left_is_released_at_the_next_beat() {
        let start = Instant::now();
        let mut watch = started(&["a", "b"], start);
        let t = start + TTL + 2 * HEARTBEAT;
        assert_eq!(watch.beat(&members(&["a"], &[]), t), ids(&["b"]));
        assert_eq!(watch.counted(), 1);
        assert!(watch.beat(&members(&["a"], &[]), t + HEARTBEAT).is_empty());
    }

    #[test]
    fn a_release_that_failed_is_tried_again_at_the_next_beat() {
        let start = Instant::now();
        let mut watch = started(&["a", "b"], start);
        let t = start + TTL + 2 * HEARTBEAT;
        let gone = watch.beat(&members(&["a"], &["b"]), t);
        assert_eq!(gone, ids(&["b"]));
        watch.not_released(&gone);
        let next = t + HEARTBEAT;
        assert_eq!(watch.beat(&members(&["a"], &["b"]), next), ids(&["b"]));
    }
}
