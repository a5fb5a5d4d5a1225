//! The Kafka shape's saved deduplication keys (`log_seen`), one row per
//! (topic, partition, offset) slice: see [`crate::seen`].

use crate::Result;
use crate::seen::{SeenSlice, pack, unpack};
use crate::sql::{Db, args};

pub(crate) async fn save(db: &impl Db, topic: &str, slices: &[SeenSlice]) -> Result<()> {
    for slice in slices {
        let keys = pack(&slice.keys);
        db.execute(
            "INSERT INTO log_seen (topic, part, upto, newest_at, n_keys, keys)
             VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (topic, part, upto) DO NOTHING",
            args![
                topic,
                slice.partition,
                slice.upto,
                slice.newest_at,
                slice.keys.len(),
                keys.as_slice()
            ],
        )
        .await?;
    }
    Ok(())
}

pub(crate) async fn load(
    db: &impl Db,
    topic: &str,
    partition: i32,
    since: i64,
    budget: usize,
) -> Result<Vec<SeenSlice>> {
    // Newest first, each row with the keys of the rows newer than it: the
    // rows whose newer rows already fill the budget are not read.
    db.query_map(
        "SELECT upto, newest_at, keys FROM (
                 SELECT upto, newest_at, keys,
                        CAST(SUM(n_keys) OVER (ORDER BY upto DESC) AS BIGINT) - n_keys AS newer
                 FROM log_seen WHERE topic = $1 AND part = $2 AND newest_at >= $3
             ) s WHERE newer < $4 ORDER BY upto",
        args![topic, partition, since, budget],
        |mut r| {
            let blob: Vec<u8> = r.take(2)?;
            Ok(SeenSlice {
                partition,
                upto: r.get(0)?,
                newest_at: r.get(1)?,
                keys: unpack(&blob),
            })
        },
    )
    .await
}

pub(crate) async fn trim(db: &impl Db, topic: &str, before: i64, budget: usize) -> Result<u64> {
    db.execute(
        "DELETE FROM log_seen WHERE topic = $1 AND (newest_at < $2 OR (part, upto) IN (
             SELECT part, upto FROM (
                 SELECT part, upto,
                        CAST(SUM(n_keys) OVER (PARTITION BY part ORDER BY upto DESC) AS BIGINT)
                            - n_keys AS newer
                 FROM log_seen WHERE topic = $1
             ) s WHERE newer >= $3))",
        args![topic, before, budget],
    )
    .await
}
