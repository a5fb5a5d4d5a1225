//! [`HealthStore`] for [`SqliteStore`]: merges on the writer, reads on the
//! read pool; the statements are `queries::health`'s.

use async_trait::async_trait;

use super::SqliteStore;
use crate::Result;
use crate::health::{HealthDelta, HealthQuery, HealthSlot, HealthStore};
use crate::queries::health;
use crate::sql::sqlite::{Lite, ready};

/// Version 20: delivery health aggregates, one row per (width: five
/// minutes or an hour, bucket, destination, node shard), with one column
/// per latency bucket. Keyed by width and time first: reads take a range
/// of one width's buckets.
pub(super) const SCHEMA: &str = "
CREATE TABLE delivery_health (
    width INTEGER NOT NULL, bucket_start INTEGER NOT NULL, destination_id TEXT NOT NULL,
    shard INTEGER NOT NULL,
    delivered INTEGER NOT NULL DEFAULT 0, retrying INTEGER NOT NULL DEFAULT 0, dead INTEGER NOT NULL DEFAULT 0,
    filtered INTEGER NOT NULL DEFAULT 0, discarded INTEGER NOT NULL DEFAULT 0, l0 INTEGER NOT NULL DEFAULT 0,
    l1 INTEGER NOT NULL DEFAULT 0, l2 INTEGER NOT NULL DEFAULT 0, l3 INTEGER NOT NULL DEFAULT 0,
    l4 INTEGER NOT NULL DEFAULT 0, l5 INTEGER NOT NULL DEFAULT 0, l6 INTEGER NOT NULL DEFAULT 0,
    l7 INTEGER NOT NULL DEFAULT 0, l8 INTEGER NOT NULL DEFAULT 0, l9 INTEGER NOT NULL DEFAULT 0,
    l10 INTEGER NOT NULL DEFAULT 0, l11 INTEGER NOT NULL DEFAULT 0, l12 INTEGER NOT NULL DEFAULT 0,
    l13 INTEGER NOT NULL DEFAULT 0, l14 INTEGER NOT NULL DEFAULT 0, l15 INTEGER NOT NULL DEFAULT 0,
    l16 INTEGER NOT NULL DEFAULT 0, l17 INTEGER NOT NULL DEFAULT 0, l18 INTEGER NOT NULL DEFAULT 0,
    l19 INTEGER NOT NULL DEFAULT 0, l20 INTEGER NOT NULL DEFAULT 0, l21 INTEGER NOT NULL DEFAULT 0,
    l22 INTEGER NOT NULL DEFAULT 0, l23 INTEGER NOT NULL DEFAULT 0, l24 INTEGER NOT NULL DEFAULT 0,
    l25 INTEGER NOT NULL DEFAULT 0, l26 INTEGER NOT NULL DEFAULT 0, l27 INTEGER NOT NULL DEFAULT 0,
    l28 INTEGER NOT NULL DEFAULT 0, l29 INTEGER NOT NULL DEFAULT 0, l30 INTEGER NOT NULL DEFAULT 0,
    l31 INTEGER NOT NULL DEFAULT 0, l32 INTEGER NOT NULL DEFAULT 0, l33 INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (width, bucket_start, destination_id, shard)
) WITHOUT ROWID;
";

#[async_trait]
impl HealthStore for SqliteStore {
    async fn add_health(&self, shard: i32, deltas: Vec<HealthDelta>) -> Result<()> {
        let weight = deltas.len().max(1);
        self.writer
            .run(weight, move |c| {
                ready(health::add(&mut Lite(c), shard, &deltas))
            })
            .await
    }

    async fn read_health(&self, query: &HealthQuery) -> Result<Vec<HealthSlot>> {
        let query = *query;
        self.readers
            .run(move |c| ready(health::read(&Lite(c), &query)))
            .await
    }

    async fn prune_health(&self, before: i64) -> Result<u64> {
        self.writer
            .run(1, move |c| ready(health::prune(&Lite(c), before)))
            .await
    }
}
