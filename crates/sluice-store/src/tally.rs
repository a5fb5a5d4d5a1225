//! [`TallyStore`]: usage counted from the Kafka shape's event log.
//!
//! In the database shapes ingest counts usage in the transaction that
//! stores the calls. In the Kafka shape no database sees a call at ingest,
//! so the delivery consumer that owns a partition counts its calls as it
//! reads them, and adds the counts of the calls below each offset it
//! commits as one [`LogTally`], never a row per call.
//!
//! Each partition's counted position is stored beside the counts, in the
//! same transaction, and a tally applies only when it starts where the
//! stored position is (or past it): so a call is counted once, whichever
//! node reads it and however often, `kill -9` and rebalances included. A
//! tally that starts before the stored position (another node counted that
//! range) is refused, and its consumer starts again from the stored
//! position. One that starts past it leaves the calls between uncounted:
//! that happens only when a node could not write its counts (the database
//! was down) and committed its offsets all the same, since delivery does
//! not wait on the database.
//!
//! Counts go to the tables ingest writes (`usage`, `usage_blocked`), so
//! every reader sees them with nothing to change. On PostgreSQL a
//! partition counts into its own row (shard `-1 - partition`), apart from
//! the rows of the nodes' ingest.

use async_trait::async_trait;

use crate::Result;

/// The counts of one (source, UTC day).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DayCounts {
    pub source_id: String,
    /// `YYYY-MM-DD`.
    pub day: String,
    /// API requests.
    pub api_calls: u64,
    /// Calls accepted (blocked ones included, as at ingest).
    pub events: u64,
    /// Calls dropped as repeats of a messageId.
    pub duplicates: u64,
}

/// Blocked calls of one (source, UTC day, event name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockedCount {
    pub source_id: String,
    pub day: String,
    pub event: String,
    pub count: u64,
}

/// The counts of a partition's calls from offset `from` up to `upto`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogTally {
    pub partition: i32,
    pub from: i64,
    pub upto: i64,
    pub days: Vec<DayCounts>,
    pub blocked: Vec<BlockedCount>,
}

#[async_trait]
pub trait TallyStore: Send + Sync {
    /// Where `partition` of `topic` is counted up to; `None` before its
    /// first tally.
    async fn tallied(&self, topic: &str, partition: i32) -> Result<Option<i64>>;

    /// Adds each tally's counts and moves its partition's counted position
    /// to its `upto`, in one transaction. A tally whose `from` is before
    /// the stored position is refused; the refused partitions are returned.
    async fn add_tallies(&self, topic: &str, tallies: &[LogTally]) -> Result<Vec<i32>>;
}
