//! [`HealthStore`]: delivery health per destination, kept as aggregates.
//!
//! The delivery engine counts outcomes as it decides them, and ingest
//! counts the calls destination filters dropped, into a [`Tally`] in
//! memory (one per node); a background task merges the tally into the
//! store every few seconds ([`HealthStore::add_health`]). Rows are keyed by
//! width, bucket, destination and node shard: each count is kept twice, in
//! its five-minute bucket ([`BUCKET_MS`]) and in its hour ([`HOUR_MS`]),
//! so that a week is read as 168 hourly rows per destination rather than
//! 2,016; each node adds to rows of its own, and reads sum the shards. No
//! row is written per delivery and no page reads the delivery log.
//!
//! Modules:
//! - `latency`: the latency histogram (pure).
//! - `rollup`: windows, their figures and chart bars from read slots (pure).
//! - `tally`: the in-memory aggregate of one node.

mod latency;
mod rollup;
mod tally;

use async_trait::async_trait;

pub use latency::{LATENCY_BUCKETS, Latency, bucket_of, lower_bound};
pub use rollup::{
    Bar, Figures, HealthWindow, Overview, bucket_end, bucket_start, fine, hourly, overview,
};
pub use tally::Tally;

use crate::Result;

/// The width of one aggregate bucket: five minutes, in milliseconds.
pub const BUCKET_MS: i64 = 300_000;

/// The width of the coarser buckets: an hour, in milliseconds.
pub const HOUR_MS: i64 = 3_600_000;

/// How long buckets are kept: the longest window (7 days) and a day's
/// margin.
pub const KEEP_MS: i64 = 8 * 86_400_000;

/// Outcome counts of one destination over some time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Deliveries that succeeded (some URL answered 2xx).
    pub delivered: u64,
    /// Attempt rounds that failed and were scheduled again.
    pub retrying: u64,
    /// Deliveries given up: a non-retryable answer, or the retry window
    /// ended.
    pub dead: u64,
    /// Calls a destination filter dropped at ingest: never sent.
    pub filtered: u64,
    /// Deliveries dropped unsent: the destination was switched off or
    /// deleted.
    pub discarded: u64,
}

impl Counts {
    pub fn merge(&mut self, o: &Counts) {
        self.delivered = self.delivered.saturating_add(o.delivered);
        self.retrying = self.retrying.saturating_add(o.retrying);
        self.dead = self.dead.saturating_add(o.dead);
        self.filtered = self.filtered.saturating_add(o.filtered);
        self.discarded = self.discarded.saturating_add(o.discarded);
    }

    /// Delivered ÷ (delivered + retrying + dead): the share of sends that
    /// ended well. Filtered and discarded calls were never sent and count
    /// in neither. `None` when nothing was sent.
    pub fn success_rate(&self) -> Option<f64> {
        let sent = self.delivered + self.retrying + self.dead;
        (sent > 0).then(|| self.delivered as f64 / sent as f64)
    }
}

/// Outcome counts and attempt latencies of one destination over some time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Health {
    pub counts: Counts,
    /// The latency of every HTTP attempt (one per URL per round).
    pub latency: Latency,
}

impl Health {
    pub fn merge(&mut self, o: &Health) {
        self.counts.merge(&o.counts);
        self.latency.merge(&o.latency);
    }

    pub fn is_empty(&self) -> bool {
        self.counts == Counts::default() && self.latency.count() == 0
    }
}

/// What one node adds to one destination's bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthDelta {
    pub destination_id: String,
    /// The five-minute bucket's start, unix milliseconds, a multiple of
    /// [`BUCKET_MS`]; the store adds it to its hour too.
    pub bucket_start: i64,
    pub health: Health,
}

/// Which buckets to read, and how to group them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HealthQuery {
    /// Which buckets: [`BUCKET_MS`] or [`HOUR_MS`].
    pub width: i64,
    /// The end of the newest bucket read (exclusive), unix milliseconds, a
    /// multiple of `width`.
    pub end: i64,
    /// How many buckets before `end` to read.
    pub buckets: u32,
    /// Buckets per slot: slot 0 is the newest `step` buckets, slot 1 the
    /// `step` before them, and so on.
    pub step: u32,
}

/// The sum, over every node, of one destination's buckets in one slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthSlot {
    pub destination_id: String,
    /// 0 is the newest; see [`HealthQuery::step`].
    pub slot: u32,
    pub health: Health,
}

/// Storing and reading the aggregates.
#[async_trait]
pub trait HealthStore: Send + Sync {
    /// Adds `deltas` to the rows of node shard `shard`, each to its
    /// five-minute bucket and to its hour: counts and histogram buckets are
    /// summed into what is there.
    async fn add_health(&self, shard: i32, deltas: Vec<HealthDelta>) -> Result<()>;
    /// Every destination's slots of `query` that hold anything, summed over
    /// the node shards.
    async fn read_health(&self, query: &HealthQuery) -> Result<Vec<HealthSlot>>;
    /// Deletes the buckets that start before `before` (unix milliseconds).
    /// Returns how many rows went.
    async fn prune_health(&self, before: i64) -> Result<u64>;
}
