//! What a consumer does when the group takes partitions from it (another
//! node joined, or this one is leaving): before they go, it commits how far
//! it got in them, so the new owner reads again only the records still in
//! flight here, not the ones finished since the last periodic commit.

use std::sync::Arc;

use rdkafka::ClientContext;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, Rebalance};

use crate::watermark::Position;

/// Called with the partitions about to be taken away: the consumer stops
/// counting them as its own and answers the positions to commit for them
/// (`crate::watermark`), leaving out those with nothing new.
pub type Positions = Arc<dyn Fn(&[i32]) -> Vec<Position> + Send + Sync>;

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
        if consumer.assignment_lost() {
            tracing::warn!(
                partitions = ?revoked,
                "event log partitions lost with the group session; their new owner reads again from the last commit"
            );
            return;
        }
        if positions.is_empty() {
            tracing::info!(partitions = ?revoked, "handing over event log partitions");
            return;
        }
        let Ok(commit) = super::consumer::commit_list(&self.topic, &positions) else {
            return;
        };
        // Synchronous: the partitions move on once this returns. A commit
        // that fails leaves the last periodic one, as a crash would.
        match consumer.commit(&commit, CommitMode::Sync) {
            Ok(()) => tracing::info!(
                partitions = ?revoked,
                positions = ?positions.iter().map(|p| (p.partition, p.offset)).collect::<Vec<_>>(),
                "handing over event log partitions"
            ),
            Err(e) => tracing::warn!(
                partitions = ?revoked,
                error = %e,
                "committing event log partitions handed over failed; their new owner reads again from the last commit"
            ),
        }
    }
}
