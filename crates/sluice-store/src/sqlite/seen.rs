//! [`SeenStore`] for [`SqliteStore`]: the statements are `queries::seen`'s.
//! The Kafka shape runs on PostgreSQL; SQLite keeps the table so that the
//! contract, and its conformance cases, are the same on every backend.

use async_trait::async_trait;

use super::SqliteStore;
use crate::Result;
use crate::queries::seen;
use crate::seen::{SeenSlice, SeenStore};
use crate::sql::sqlite::{Lite, ready};

/// Version 21: the Kafka shape's saved deduplication keys.
pub(super) const SCHEMA: &str = "
CREATE TABLE log_seen (
    topic TEXT NOT NULL, part INTEGER NOT NULL, upto INTEGER NOT NULL,
    newest_at INTEGER NOT NULL, n_keys INTEGER NOT NULL, keys BLOB NOT NULL,
    PRIMARY KEY (topic, part, upto)
) WITHOUT ROWID;
";

#[async_trait]
impl SeenStore for SqliteStore {
    async fn save_seen(&self, topic: &str, slices: &[SeenSlice]) -> Result<()> {
        let (topic, slices) = (topic.to_owned(), slices.to_vec());
        self.writer
            .run(slices.len().max(1), move |c| {
                ready(seen::save(&Lite(c), &topic, &slices))
            })
            .await
    }

    async fn load_seen(
        &self,
        topic: &str,
        partition: i32,
        since: i64,
        budget: usize,
    ) -> Result<Vec<SeenSlice>> {
        let topic = topic.to_owned();
        self.readers
            .run(move |c| ready(seen::load(&Lite(c), &topic, partition, since, budget)))
            .await
    }

    async fn trim_seen(&self, topic: &str, before: i64, budget: usize) -> Result<u64> {
        let topic = topic.to_owned();
        self.writer
            .run(1, move |c| {
                ready(seen::trim(&Lite(c), &topic, before, budget))
            })
            .await
    }
}
