//! [`Usage`]: the delivery consumer's usage counts (`tally`), read from and
//! stored to `sluice_store::TallyStore`. Shared by the consumer's loop, its
//! sends and its hand-over of partitions the group takes away.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use sluice_store::log_record::LogRecord;
use sluice_store::{LogTally, Store};

use super::tally::Tally;

/// Counts usage of the calls this node reads, each once.
pub(super) struct Usage {
    tally: Mutex<Tally>,
    store: Arc<dyn Store>,
    topic: String,
}

impl Usage {
    pub(super) fn new(store: Arc<dyn Store>, topic: String) -> Self {
        Usage {
            tally: Mutex::default(),
            store,
            topic,
        }
    }

    fn tally(&self) -> MutexGuard<'_, Tally> {
        self.tally.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A partition newly this node's, read from `first` on: counts from
    /// where the store has got to, or from `first` when it has no count of
    /// the partition yet. A store that cannot answer leaves the start at
    /// `first` too; a tally that overlaps what was counted is then refused,
    /// and counting starts again from the store.
    pub(super) async fn take_over(&self, partition: i32, first: i64) {
        let from = match self.store.tallied(&self.topic, partition).await {
            Ok(from) => from.unwrap_or(first),
            Err(e) => {
                sluice_store::warn_every!(
                    sluice_store::log_gate::BACKGROUND_EVERY,
                    e,
                    "reading where usage is counted up to failed"
                );
                first
            }
        };
        self.tally().start(partition, from);
    }

    /// The call `record`, at `offset` of `partition`, was read; `retry`
    /// when it repeats one read before.
    pub(super) fn read(&self, partition: i32, offset: i64, record: &LogRecord, retry: bool) {
        self.tally().read(partition, offset, record, retry);
    }

    /// Stores the counts of the calls below `positions`. A failure keeps
    /// them for the next try; delivery does not wait for it.
    pub(super) async fn save(&self, positions: &[(i32, i64)]) {
        let tallies = self.tally().below(positions);
        if tallies.is_empty() {
            return;
        }
        let stored = self.store.add_tallies(&self.topic, &tallies).await;
        self.stored(&tallies, stored).await;
    }

    async fn stored(&self, tallies: &[LogTally], stored: sluice_store::Result<Vec<i32>>) {
        match stored {
            Ok(refused) => {
                self.tally().stored(tallies, &refused);
                for t in tallies.iter().filter(|t| refused.contains(&t.partition)) {
                    self.take_over(t.partition, t.from).await;
                }
            }
            Err(e) => sluice_store::warn_every!(
                sluice_store::log_gate::BACKGROUND_EVERY,
                e,
                "storing usage counts failed; trying again"
            ),
        }
    }

    /// [`Usage::save`] from the consumer's rebalance callback, for
    /// partitions being taken away (see `dedup::Keys::save_now`): the new
    /// owner starts at the offsets committed next, and would never count
    /// what is below them. Then forgets those partitions.
    pub(super) fn save_now(&self, positions: &[(i32, i64)], revoked: &[i32]) {
        // Not done without a multi-thread runtime: those counts are lost.
        let _ = super::finish_here(self.save(positions));
        self.tally().forget(revoked);
    }

    /// Forgets partitions no longer this node's.
    pub(super) fn keep(&self, assigned: &[i32]) {
        self.tally().keep(assigned);
    }
}
