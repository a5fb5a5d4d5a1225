//! [`HealthStore`] for [`PostgresStore`]: the statements are
//! `queries::health`'s, on a pooled connection.

use async_trait::async_trait;

use super::PostgresStore;
use crate::Result;
use crate::health::{HealthDelta, HealthQuery, HealthSlot, HealthStore};
use crate::queries::health;

/// Delivery health aggregates, one row per (width: five minutes or an
/// hour, bucket, destination, node shard): each node merges into rows of
/// its own, so no two nodes wait on one row; reads sum the shards. Keyed
/// by width and time first: reads take a range of one width's buckets.
pub(super) const SCHEMA: &str = r#"
CREATE TABLE delivery_health (
    width bigint NOT NULL, bucket_start bigint NOT NULL, destination_id text COLLATE "C" NOT NULL,
    shard integer NOT NULL,
    delivered bigint NOT NULL DEFAULT 0, retrying bigint NOT NULL DEFAULT 0, dead bigint NOT NULL DEFAULT 0,
    filtered bigint NOT NULL DEFAULT 0, discarded bigint NOT NULL DEFAULT 0, l0 bigint NOT NULL DEFAULT 0,
    l1 bigint NOT NULL DEFAULT 0, l2 bigint NOT NULL DEFAULT 0, l3 bigint NOT NULL DEFAULT 0,
    l4 bigint NOT NULL DEFAULT 0, l5 bigint NOT NULL DEFAULT 0, l6 bigint NOT NULL DEFAULT 0,
    l7 bigint NOT NULL DEFAULT 0, l8 bigint NOT NULL DEFAULT 0, l9 bigint NOT NULL DEFAULT 0,
    l10 bigint NOT NULL DEFAULT 0, l11 bigint NOT NULL DEFAULT 0, l12 bigint NOT NULL DEFAULT 0,
    l13 bigint NOT NULL DEFAULT 0, l14 bigint NOT NULL DEFAULT 0, l15 bigint NOT NULL DEFAULT 0,
    l16 bigint NOT NULL DEFAULT 0, l17 bigint NOT NULL DEFAULT 0, l18 bigint NOT NULL DEFAULT 0,
    l19 bigint NOT NULL DEFAULT 0, l20 bigint NOT NULL DEFAULT 0, l21 bigint NOT NULL DEFAULT 0,
    l22 bigint NOT NULL DEFAULT 0, l23 bigint NOT NULL DEFAULT 0, l24 bigint NOT NULL DEFAULT 0,
    l25 bigint NOT NULL DEFAULT 0, l26 bigint NOT NULL DEFAULT 0, l27 bigint NOT NULL DEFAULT 0,
    l28 bigint NOT NULL DEFAULT 0, l29 bigint NOT NULL DEFAULT 0, l30 bigint NOT NULL DEFAULT 0,
    l31 bigint NOT NULL DEFAULT 0, l32 bigint NOT NULL DEFAULT 0, l33 bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (width, bucket_start, destination_id, shard)
);
"#;

#[async_trait]
impl HealthStore for PostgresStore {
    async fn add_health(&self, shard: i32, deltas: Vec<HealthDelta>) -> Result<()> {
        health::add(&mut self.db().await?, shard, &deltas).await
    }

    async fn read_health(&self, query: &HealthQuery) -> Result<Vec<HealthSlot>> {
        health::read(&self.db().await?, query).await
    }

    async fn prune_health(&self, before: i64) -> Result<u64> {
        health::prune(&self.db().await?, before).await
    }
}
