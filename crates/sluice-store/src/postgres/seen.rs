//! [`SeenStore`] for [`PostgresStore`]: the statements are
//! `queries::seen`'s, on a pooled connection.

use async_trait::async_trait;

use super::PostgresStore;
use crate::Result;
use crate::queries::seen;
use crate::seen::{SeenSlice, SeenStore};

/// The Kafka shape's saved deduplication keys: one row per partition and
/// commit, 8 bytes per call in `keys` (stored out of line by TOAST once a
/// slice passes about 2 KB).
pub(super) const SCHEMA: &str = r#"
CREATE TABLE log_seen (
    topic text COLLATE "C" NOT NULL, part integer NOT NULL, upto bigint NOT NULL,
    newest_at bigint NOT NULL, n_keys bigint NOT NULL, keys bytea NOT NULL,
    PRIMARY KEY (topic, part, upto)
);
"#;

#[async_trait]
impl SeenStore for PostgresStore {
    async fn save_seen(&self, topic: &str, slices: &[SeenSlice]) -> Result<()> {
        seen::save(&self.db().await?, topic, slices).await
    }

    async fn load_seen(
        &self,
        topic: &str,
        partition: i32,
        since: i64,
        budget: usize,
    ) -> Result<Vec<SeenSlice>> {
        seen::load(&self.db().await?, topic, partition, since, budget).await
    }

    async fn trim_seen(&self, topic: &str, before: i64, budget: usize) -> Result<u64> {
        seen::trim(&self.db().await?, topic, before, budget).await
    }
}
