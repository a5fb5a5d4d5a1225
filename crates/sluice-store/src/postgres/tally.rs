//! [`TallyStore`] for [`PostgresStore`]: the statements are
//! `queries::tally`'s, on a pooled connection.

use async_trait::async_trait;

use super::PostgresStore;
use crate::Result;
use crate::queries::tally;
use crate::tally::{LogTally, TallyStore};

/// Where the Kafka shape's usage counts have got to: a row per partition,
/// updated once a second at most by the partition's owner.
pub(super) const SCHEMA: &str = r#"
CREATE TABLE log_tallied (
    topic text COLLATE "C" NOT NULL, part integer NOT NULL, upto bigint NOT NULL,
    PRIMARY KEY (topic, part)
);
"#;

#[async_trait]
impl TallyStore for PostgresStore {
    async fn tallied(&self, topic: &str, partition: i32) -> Result<Option<i64>> {
        tally::tallied(&self.db().await?, topic, partition).await
    }

    async fn add_tallies(&self, topic: &str, tallies: &[LogTally]) -> Result<Vec<i32>> {
        tally::add(&mut self.db().await?, topic, tallies).await
    }
}
