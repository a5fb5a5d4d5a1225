//! The Kafka shape's usage counts (`log_tallied`, and the usage tables):
//! see [`crate::tally`].

use crate::Result;
use crate::sql::{Conn, Db, Dialect, Tx, args};
use crate::tally::LogTally;

pub(crate) async fn tallied(db: &impl Db, topic: &str, partition: i32) -> Result<Option<i64>> {
    db.query_opt(
        "SELECT upto FROM log_tallied WHERE topic = $1 AND part = $2",
        args![topic, partition],
    )
    .await?
    .map(|r| r.get(0))
    .transpose()
}

pub(crate) async fn add(
    conn: &mut impl Conn,
    topic: &str,
    tallies: &[LogTally],
) -> Result<Vec<i32>> {
    let tx = conn.begin().await?;
    let mut refused = Vec::new();
    for tally in tallies {
        // Moves the position only from at or behind this tally's start;
        // the row stays locked to the end of the transaction.
        let moved = tx
            .execute(
                "INSERT INTO log_tallied (topic, part, upto) VALUES ($1, $2, $3)
                 ON CONFLICT (topic, part) DO UPDATE SET upto = excluded.upto
                 WHERE log_tallied.upto <= $4",
                args![topic, tally.partition, tally.upto, tally.from],
            )
            .await?;
        if moved == 0 {
            refused.push(tally.partition);
            continue;
        }
        add_counts(&tx, tally).await?;
    }
    tx.commit().await?;
    Ok(refused)
}

async fn add_counts(tx: &impl Tx, tally: &LogTally) -> Result<()> {
    // PostgreSQL counts into rows per writer (`shard`, here one per
    // partition); SQLite has one writer and no such column.
    let shard = -1 - tally.partition;
    let sharded = tx.dialect() == Dialect::Postgres;
    let (column, key) = if sharded {
        (", shard", ", shard")
    } else {
        ("", "")
    };
    let usage = format!(
        "INSERT INTO usage AS u (source_id, day, api_calls, events, duplicates{column})
         VALUES ($1, $2, $3, $4, $5{})
         ON CONFLICT (source_id, day{key}) DO UPDATE
         SET api_calls = u.api_calls + excluded.api_calls, events = u.events + excluded.events,
             duplicates = u.duplicates + excluded.duplicates",
        if sharded { ", $6" } else { "" }
    );
    for d in &tally.days {
        let (id, day) = (d.source_id.as_str(), d.day.as_str());
        if sharded {
            let params = args![id, day, d.api_calls, d.events, d.duplicates, shard];
            tx.execute(&usage, params).await?;
        } else {
            let params = args![id, day, d.api_calls, d.events, d.duplicates];
            tx.execute(&usage, params).await?;
        }
    }
    let blocked = format!(
        "INSERT INTO usage_blocked AS u (source_id, day, event, count{column})
         VALUES ($1, $2, $3, $4{})
         ON CONFLICT (source_id, day, event{key}) DO UPDATE SET count = u.count + excluded.count",
        if sharded { ", $5" } else { "" }
    );
    for b in &tally.blocked {
        let (id, day, event) = (b.source_id.as_str(), b.day.as_str(), b.event.as_str());
        if sharded {
            tx.execute(&blocked, args![id, day, event, b.count, shard])
                .await?;
        } else {
            tx.execute(&blocked, args![id, day, event, b.count]).await?;
        }
    }
    Ok(())
}
