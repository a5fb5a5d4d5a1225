//! What a consumer does when the group takes partitions from it (another
//! node joined, or this one is leaving): before they go, it commits how far
//! it got in them, so the new owner reads again only the records still in
//! flight here, not the ones finished since the last periodic commit.

use std::sync::Arc;

use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance};
use rdkafka::{ClientContext, Offset, TopicPartitionList};

/// Called with the partitions about to be taken away: the consumer stops
/// counting them as its own and answers `(partition, offset)` up to which
/// every record of theirs is dealt with (`crate::watermark`), leaving out
/// those with nothing new.
pub type Positions = Arc<dyn Fn(&[i32]) -> Vec<(i32, i64)> + Send + Sync>;

/// The consumer's context: commits revoked partitions' positions.
pub(super) struct GroupContext {
    pub(super) topic: String,
    pub(super) positions: Option<Positions>,
}

impl ClientContext for GroupContext {}

impl ConsumerContext for GroupContext {
    fn pre_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        let (Rebalance::Revoke(list), Some(positions)) = (rebalance, &self.positions) else {
            return;
        };
        let revoked: Vec<i32> = list
            .elements()
            .iter()
            .filter(|e| e.topic() == self.topic)
            .map(|e| e.partition())
            .collect();
        let positions = positions(&revoked);
        // Partitions lost with a lapsed session already belong to another
        // member, which started at the last commit; this one may not commit.
        if positions.is_empty() || consumer.assignment_lost() {
            return;
        }
        let mut commit = TopicPartitionList::with_capacity(positions.len());
        for (partition, offset) in positions {
            if commit
                .add_partition_offset(&self.topic, partition, Offset::Offset(offset))
                .is_err()
            {
                return;
            }
        }
        // Synchronous: the partitions move on once this returns. A commit
        // that fails leaves the last periodic one, as a crash would.
        let _ = consumer.commit(&commit, CommitMode::Sync);
    }
}
