//! Where the engine reads calls when they are not in the store: the Kafka
//! shape's event log (docs/kafka.md, "The profile engine").
//!
//! The store keeps, per partition of the log, the offset the engine has
//! read up to ([`sluice_store::LogAdvance`]); a step moves those positions
//! in the transaction that writes its profiles, so each call is applied
//! once whatever happens to the node. A feed only reads: it starts each
//! partition at the stored position and keeps its own place while its
//! steps commit. Ownership stays with the engine's partitions and their
//! leases in the store: log partition `p` belongs to engine partition
//! `p % n`, so every node reads the log partitions of the engine
//! partitions it holds, and a dead node's move with its leases.

use futures::future::BoxFuture;
use sluice_store::{CursorEvent, LogAdvance};

use crate::error::ProfileError;

/// What one read of a feed gave.
#[derive(Debug, Clone, Default)]
pub struct FeedRead {
    /// Calls in log order within each partition. Those the engine does
    /// not apply (blocked calls, records it cannot read) come marked
    /// [`CursorEvent::elsewhere`], so their positions move too.
    pub events: Vec<CursorEvent>,
    /// Where each partition read now stands: what the step commits.
    pub advance: LogAdvance,
}

/// A source of calls for the engine other than the store's events.
pub trait EventFeed: Send + Sync + 'static {
    /// Up to `limit` calls of the log partitions that belong to the engine
    /// partitions `held` (of `of` in all), each after the position the
    /// feed stands at.
    fn read<'a>(
        &'a self,
        held: &'a [u16],
        of: u16,
        limit: u32,
    ) -> BoxFuture<'a, Result<FeedRead, ProfileError>>;

    /// Forgets where the feed stands: the next read starts again from the
    /// positions stored. Called when a step was not committed (refused or
    /// failed) and whenever the engine renews its leases, so a partition
    /// that another node moved meanwhile is read from where that node left
    /// it.
    fn reset(&self);
}

/// The log partitions among `partitions` that belong to the engine
/// partitions `held` of `of`.
pub fn owned(partitions: &[i32], held: &[u16], of: u16) -> Vec<i32> {
    let of = i32::from(of.max(1));
    partitions
        .iter()
        .copied()
        .filter(|p| u16::try_from(p.rem_euclid(of)).is_ok_and(|engine| held.contains(&engine)))
        .collect()
}

/// The seq a call read from partition `partition` at `offset` stands at
/// in the profile: unique across partitions and rising with the offset,
/// as an event's seq is in the database shapes.
pub fn seq_of(partition: i32, offset: i64) -> i64 {
    offset
        .saturating_mul(1 << 16)
        .saturating_add(i64::from(partition & 0xffff))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_log_partition_belongs_to_one_engine_partition() {
        let log: Vec<i32> = (0..64).collect();
        let mut seen = Vec::new();
        for engine in 0..16u16 {
            let mine = owned(&log, &[engine], 16);
            assert_eq!(mine.len(), 4, "{mine:?}");
            seen.extend(mine);
        }
        seen.sort_unstable();
        assert_eq!(seen, log);
        assert_eq!(owned(&log, &[0, 1], 16), vec![0, 1, 16, 17, 32, 33, 48, 49]);
    }

    #[test]
    fn seqs_rise_with_the_offset_and_differ_across_partitions() {
        assert!(seq_of(3, 10) < seq_of(0, 11));
        assert_ne!(seq_of(1, 7), seq_of(2, 7));
        assert!(seq_of(63, 0) < seq_of(0, 1));
    }
}
