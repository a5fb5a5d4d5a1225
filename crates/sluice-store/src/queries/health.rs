//! The delivery health aggregates (`delivery_health`): merged in by each
//! node's tally, summed over node shards on read, pruned after a week.
//!
//! One row per (width, bucket start, destination, node shard): each delta
//! goes to its five-minute bucket and to its hour. Each row has the outcome
//! counts and one column per latency bucket (`l0` … `l33`), so that a merge
//! is one upsert adding column to column and a read one `SUM` per column,
//! the same statements on both backends.

use std::sync::LazyLock;

use crate::health::{
    BUCKET_MS, HOUR_MS, Health, HealthDelta, HealthQuery, HealthSlot, LATENCY_BUCKETS,
};
use crate::sql::{Conn, Db, Param, Row, Tx, args};
use crate::{Result, StoreError};

const COUNTS: [&str; 5] = ["delivered", "retrying", "dead", "filtered", "discarded"];

/// Every summed column, counts first, then the latency buckets.
fn summed() -> Vec<String> {
    COUNTS
        .iter()
        .map(|c| (*c).to_owned())
        .chain((0..LATENCY_BUCKETS).map(|i| format!("l{i}")))
        .collect()
}

static UPSERT: LazyLock<String> = LazyLock::new(|| {
    let cols = summed();
    let values: Vec<String> = (5..5 + cols.len()).map(|n| format!("${n}")).collect();
    let sets: Vec<String> = cols
        .iter()
        .map(|c| format!("{c} = h.{c} + excluded.{c}"))
        .collect();
    format!(
        "INSERT INTO delivery_health AS h (width, bucket_start, destination_id, shard, {})
         VALUES ($1, $2, $3, $4, {})
         ON CONFLICT (width, bucket_start, destination_id, shard) DO UPDATE SET {}",
        cols.join(", "),
        values.join(", "),
        sets.join(", ")
    )
});

static READ: LazyLock<String> = LazyLock::new(|| {
    let sums: Vec<String> = summed()
        .iter()
        .map(|c| format!("CAST(SUM({c}) AS BIGINT)"))
        .collect();
    // $1: end; $2: milliseconds per slot; $3: the first bucket read; $4:
    // the width.
    format!(
        "SELECT destination_id, CAST(($1 - bucket_start - $4) / $2 AS BIGINT) AS slot, {}
         FROM delivery_health WHERE width = $4 AND bucket_start >= $3 AND bucket_start < $1
         GROUP BY destination_id, slot",
        sums.join(", ")
    )
});

/// Adds `deltas` to shard `shard`'s rows, in one transaction: all of them
/// or none, so that a failed merge can be put back and tried again.
pub(crate) async fn add(conn: &mut impl Conn, shard: i32, deltas: &[HealthDelta]) -> Result<()> {
    let tx = conn.begin().await?;
    for d in deltas {
        let c = &d.health.counts;
        let hour = d.bucket_start.div_euclid(HOUR_MS) * HOUR_MS;
        for (width, start) in [(BUCKET_MS, d.bucket_start), (HOUR_MS, hour)] {
            let mut params: Vec<Param<'_>> = vec![
                Param::from(width),
                Param::from(start),
                Param::from(&d.destination_id),
                Param::from(shard),
            ];
            params.extend(
                [c.delivered, c.retrying, c.dead, c.filtered, c.discarded]
                    .into_iter()
                    .chain(d.health.latency.0.iter().copied())
                    .map(Param::from),
            );
            tx.execute(&UPSERT, &params).await?;
        }
    }
    tx.commit().await
}

fn slot(row: Row) -> Result<HealthSlot> {
    let mut row = row;
    let destination_id: String = row.take(0)?;
    let slot: i64 = row.get(1)?;
    let n = |i: usize| -> Result<u64> { row.get::<Option<u64>>(i).map(Option::unwrap_or_default) };
    let mut health = Health::default();
    let c = &mut health.counts;
    (c.delivered, c.retrying, c.dead, c.filtered, c.discarded) =
        (n(2)?, n(3)?, n(4)?, n(5)?, n(6)?);
    for (i, bucket) in health.latency.0.iter_mut().enumerate() {
        *bucket = n(7 + i)?;
    }
    Ok(HealthSlot {
        destination_id,
        slot: u32::try_from(slot)
            .map_err(|_| StoreError::corrupt(format!("health slot {slot} out of range")))?,
        health,
    })
}

/// The slots of `q`, summed over shards.
pub(crate) async fn read(db: &impl Db, q: &HealthQuery) -> Result<Vec<HealthSlot>> {
    let slot_ms = i64::from(q.step.max(1)) * q.width;
    let first = q.end - i64::from(q.buckets) * q.width;
    db.query_map(&READ, args![q.end, slot_ms, first, q.width], slot)
        .await
}

/// Deletes the buckets of either width that start before `before`.
pub(crate) async fn prune(db: &impl Db, before: i64) -> Result<u64> {
    let mut deleted = 0;
    for width in [BUCKET_MS, HOUR_MS] {
        deleted += db
            .execute(
                "DELETE FROM delivery_health WHERE width = $1 AND bucket_start < $2",
                args![width, before],
            )
            .await?;
    }
    Ok(deleted)
}
