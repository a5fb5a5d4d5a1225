//! [`SeenStore`]: what the Kafka shape's delivery consumers have read, kept
//! so that deduplication survives a partition changing hands.
//!
//! A consumer drops a client's retry of a call it read within the
//! deduplication window (`sluice_log::recent`). Its memory is its own, so
//! when a partition moves to another node (`kill -9`, a rebalance) the new
//! owner would start knowing nothing. Before a consumer commits a
//! partition's offset it saves the keys of the calls below that offset as
//! one [`SeenSlice`]; the node that takes the partition over loads the
//! newest slices first, and so drops the retries the old owner would have.
//!
//! A slice covers only calls below the offset being committed, all of them
//! dealt with (delivered or in retry state): a call still in flight is never
//! in a slice, so a new owner reading it again never mistakes it for its own
//! retry. Slices are written once a second per partition at most, one row
//! each, never a row per call. Each is 8 bytes per call.

use async_trait::async_trait;

use crate::Result;

/// The keys of the calls a consumer read in one partition of the log below
/// an offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenSlice {
    /// The partition.
    pub partition: i32,
    /// Every call below this offset was dealt with when the slice was
    /// saved; the keys are of calls from the slice before up to here.
    pub upto: i64,
    /// When ingest accepted the newest of these calls (unix ms): the slice
    /// leaves the window with its newest call.
    pub newest_at: i64,
    /// `sluice_log::recent::key` of each call's (source, messageId).
    pub keys: Vec<u64>,
}

#[async_trait]
pub trait SeenStore: Send + Sync {
    /// Saves `slices` of `topic`. A slice whose (partition, `upto`) is
    /// already saved is kept as it was.
    async fn save_seen(&self, topic: &str, slices: &[SeenSlice]) -> Result<()>;

    /// The newest slices of `partition` whose newest call was accepted at
    /// or after `since`, up to about `budget` keys in all, oldest first.
    async fn load_seen(
        &self,
        topic: &str,
        partition: i32,
        since: i64,
        budget: usize,
    ) -> Result<Vec<SeenSlice>>;

    /// Deletes slices of `topic` whose newest call was accepted before
    /// `before`, and those past the newest `budget` keys of their
    /// partition; returns how many.
    async fn trim_seen(&self, topic: &str, before: i64, budget: usize) -> Result<u64>;
}

/// `keys` as stored: 8 bytes each, little-endian.
pub(crate) fn pack(keys: &[u64]) -> Vec<u8> {
    keys.iter().flat_map(|k| k.to_le_bytes()).collect()
}

/// The keys of a stored blob; a trailing partial key is ignored.
pub(crate) fn unpack(blob: &[u8]) -> Vec<u64> {
    blob.chunks_exact(8)
        .map(|c| {
            let mut b = [0u8; 8];
            b.copy_from_slice(c);
            u64::from_le_bytes(b)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_survive_packing() {
        let keys = vec![0, 1, u64::MAX, 0x0102_0304_0506_0708];
        assert_eq!(pack(&keys).len(), 32);
        assert_eq!(unpack(&pack(&keys)), keys);
        assert_eq!(unpack(&[1, 2, 3]), Vec::<u64>::new(), "a partial key");
    }
}
