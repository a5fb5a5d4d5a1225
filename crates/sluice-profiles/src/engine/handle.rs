//! The engine's handle: waking it early, and its counters.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::Notify;

/// Wakes the engine early (after an ingest commit or a definition change),
/// and reads its counters.
#[derive(Clone, Default)]
pub struct EngineHandle {
    wake: Arc<Notify>,
    stats: Arc<Stats>,
}

impl EngineHandle {
    pub fn notify(&self) {
        self.wake.notify_one();
    }

    /// Definitions evaluated for one person, in all, since the start: an
    /// event counts only the definitions reading what it changed.
    pub fn evaluations(&self) -> u64 {
        self.stats.evaluations.load(Ordering::Relaxed)
    }

    /// Live definitions, as the engine last read them.
    pub fn definitions(&self) -> u64 {
        self.stats.definitions.load(Ordering::Relaxed)
    }

    /// Engine partitions this node held at its last renewal.
    pub fn partitions(&self) -> u64 {
        self.stats.partitions.load(Ordering::Relaxed)
    }
}

/// The engine's counters (see [`EngineHandle`]).
#[derive(Default)]
pub struct Stats {
    evaluations: AtomicU64,
    pub(super) definitions: AtomicU64,
    pub(super) partitions: AtomicU64,
}

impl Stats {
    pub(crate) fn evaluated(&self, n: usize) {
        self.evaluations
            .fetch_add(u64::try_from(n).unwrap_or(u64::MAX), Ordering::Relaxed);
    }
}

impl EngineHandle {
    pub(super) fn wake(&self) -> Arc<Notify> {
        self.wake.clone()
    }

    pub(super) fn stats(&self) -> Arc<Stats> {
        self.stats.clone()
    }
}
