//! [`TallyStore`] for [`SqliteStore`]: the statements are
//! `queries::tally`'s. The Kafka shape runs on PostgreSQL; SQLite keeps
//! the table so that the contract, and its conformance cases, are the same
//! on every backend.

use async_trait::async_trait;

use super::SqliteStore;
use crate::Result;
use crate::queries::tally;
use crate::sql::sqlite::{Lite, ready};
use crate::tally::{LogTally, TallyStore};

/// Version 22: where the Kafka shape's usage counts have got to.
pub(super) const SCHEMA: &str = "
CREATE TABLE log_tallied (
    topic TEXT NOT NULL, part INTEGER NOT NULL, upto INTEGER NOT NULL,
    PRIMARY KEY (topic, part)
) WITHOUT ROWID;
";

#[async_trait]
impl TallyStore for SqliteStore {
    async fn tallied(&self, topic: &str, partition: i32) -> Result<Option<i64>> {
        let topic = topic.to_owned();
        self.readers
            .run(move |c| ready(tally::tallied(&Lite(c), &topic, partition)))
            .await
    }

    async fn add_tallies(&self, topic: &str, tallies: &[LogTally]) -> Result<Vec<i32>> {
        let (topic, tallies) = (topic.to_owned(), tallies.to_vec());
        self.writer
            .run(tallies.len().max(1), move |c| {
                ready(tally::add(&mut Lite(c), &topic, &tallies))
            })
            .await
    }
}
