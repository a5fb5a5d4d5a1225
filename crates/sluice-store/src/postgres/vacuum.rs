//! One `VACUUM deliveries` when a large backlog has just drained.
//!
//! Why: PostgreSQL keeps a row's old versions, and their index entries,
//! until VACUUM removes them. Each delivery leaves two in the partial index
//! `deliveries_due` (the claim's lease stamp, then its outcome), all of them
//! ahead of the live rows in the due order that claims and `next_due` walk.
//! After a backlog of 200,000 drained, a claim read some 1,650 index pages
//! to find a few due rows (5–27 ms), until autovacuum came by, which it does
//! at most once per `autovacuum_naptime` (a minute by default). Meanwhile
//! every event waited behind those scans (docs/postgres.md, "Latency after
//! a large backlog drains").
//!
//! So each node counts the deliveries it settled. When a claim comes back
//! short (the backlog is gone) after claims came back full (there was one),
//! and the node settled at least [`PostgresConfig::vacuum_after_settled`]
//! deliveries (50,000 by default) since its last vacuum, and that vacuum is
//! at least [`MIN_INTERVAL`] old, the node vacuums the table once, in the
//! background, on a pooled connection. A steady trickle never has a
//! backlog, and a steady flood that keeps draining is vacuumed at most once
//! a minute per node: a vacuum reads the table's recently changed pages and,
//! when enough of them hold dead rows, every index of it, so its cost grows
//! with the table while its use here does not.
//!
//! It waits for the table's vacuum lock rather than skipping: an autovacuum
//! already at work (paced by its cost delay) gives way within
//! `deadlock_timeout`, and a peer node's vacuum leaves little to do. The
//! lock does not conflict with reads or writes of rows, so no request
//! waits for it. Failure only logs: autovacuum still comes.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use deadpool_postgres::Pool;

#[cfg(doc)]
use super::PostgresConfig;

/// The shortest time between two vacuums started by one node.
pub(super) const MIN_INTERVAL: Duration = Duration::from_secs(60);

/// Counts settled deliveries and runs the vacuum (see the module docs).
pub(super) struct DrainVacuum {
    /// Settled deliveries that earn a vacuum; 0: never.
    after: u64,
    settled: AtomicU64,
    /// A claim came back full since the last vacuum: there was a backlog.
    backlog: AtomicBool,
    last: Mutex<Option<Instant>>,
    running: Arc<AtomicBool>,
}

impl DrainVacuum {
    pub(super) fn new(after: u64) -> DrainVacuum {
        DrainVacuum {
            after,
            settled: AtomicU64::new(0),
            backlog: AtomicBool::new(false),
            last: Mutex::new(None),
            running: Arc::new(AtomicBool::new(false)),
        }
    }

    /// `n` reports were written: each left a dead version of its delivery's
    /// row behind (a hand-back too, though it stays pending).
    pub(super) fn settled(&self, n: usize) {
        self.settled
            .fetch_add(u64::try_from(n).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// A claim returned `got` of the `limit` it asked for: when that is
    /// short after a backlog, and enough was settled since the last vacuum,
    /// start one.
    pub(super) fn after_claim(&self, pool: &Pool, got: usize, limit: u32) {
        let short = u32::try_from(got).is_ok_and(|got| got < limit);
        if !short {
            self.backlog.store(true, Ordering::Relaxed);
            return;
        }
        if self.after == 0
            || !self.backlog.load(Ordering::Relaxed)
            || self.settled.load(Ordering::Relaxed) < self.after
        {
            return;
        }
        {
            let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
            if last.is_some_and(|at| at.elapsed() < MIN_INTERVAL) {
                return;
            }
            if self.running.swap(true, Ordering::AcqRel) {
                return;
            }
            *last = Some(Instant::now());
        }
        self.settled.store(0, Ordering::Relaxed);
        self.backlog.store(false, Ordering::Relaxed);
        let pool = pool.clone();
        let running = Arc::clone(&self.running);
        tokio::spawn(async move {
            let started = std::time::Instant::now();
            let outcome = match pool.get().await {
                Ok(client) => client
                    .batch_execute("VACUUM deliveries")
                    .await
                    .map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            match outcome {
                Ok(()) => tracing::info!(
                    elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
                    "vacuumed deliveries after a drained backlog"
                ),
                Err(error) => tracing::warn!(%error, "vacuum of deliveries after a drain failed"),
            }
            running.store(false, Ordering::Release);
        });
    }
}
