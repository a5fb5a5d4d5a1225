//! The observed schema's reads, block rules and destination filters
//! documents, and blocked-call usage. The schema flush, one multi-row
//! write per source, stays per backend (SQLite's cached single-row
//! statements, PostgreSQL's `UNNEST` under an advisory lock).

use crate::records::now;
use crate::source_schema::VOLUME_DAYS;
use crate::sql::{Db, Row, args};
use crate::{BlockedDay, Result, SchemaEntry, SchemaFlush, SchemaPage, SchemaQuery, UsageDay};

/// Where a settings document is kept: its table, key and column.
#[derive(Clone, Copy)]
pub(crate) enum Doc {
    SourceRules,
    DestinationFilters,
}

impl Doc {
    fn parts(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Doc::SourceRules => ("source_rules", "source_id", "rules"),
            Doc::DestinationFilters => ("destination_filters", "destination_id", "filters"),
        }
    }
}

pub(crate) async fn put_doc(db: &impl Db, doc: Doc, id: &str, text: &str) -> Result<()> {
    let (table, key, column) = doc.parts();
    let sql = format!(
        "INSERT INTO {table} ({key}, {column}, updated_at) VALUES ($1, $2, $3)
         ON CONFLICT ({key}) DO UPDATE SET {column} = excluded.{column},
                                           updated_at = excluded.updated_at"
    );
    db.execute(&sql, args![id, text, now()]).await?;
    Ok(())
}

pub(crate) async fn list_docs(db: &impl Db, doc: Doc) -> Result<Vec<(String, String)>> {
    let (table, key, column) = doc.parts();
    let sql = format!("SELECT {key}, {column} FROM {table}");
    db.query_map(&sql, args![], |mut r| Ok((r.take(0)?, r.take(1)?)))
        .await
}

fn entry(mut r: Row) -> Result<SchemaEntry> {
    Ok(SchemaEntry {
        kind: r.take(0)?,
        name: r.take(1)?,
        property: r.take(2)?,
        types: r.get(3)?,
        first_seen: r.get(4)?,
        last_seen: r.get(5)?,
        volume_24h: r.get(6)?,
        volume_7d: r.get(7)?,
        volume_30d: r.get(8)?,
    })
}

/// One page of a source's observed schema with its volumes over 24 hours,
/// 7 days and 30 days, summed from hourly counts.
pub(crate) async fn entries(db: &impl Db, source_id: &str, q: &SchemaQuery) -> Result<SchemaPage> {
    let (h24, d7, d30) = q.windows();
    let order = if q.descending { "DESC" } else { "ASC" };
    let sql = format!(
        "SELECT e.kind, e.name, e.property, e.types, e.first_seen, e.last_seen,
                CAST(COALESCE(SUM(CASE WHEN v.hour >= $2 THEN v.count END), 0) AS bigint) AS v24,
                CAST(COALESCE(SUM(CASE WHEN v.hour >= $3 THEN v.count END), 0) AS bigint) AS v7,
                CAST(COALESCE(SUM(v.count), 0) AS bigint) AS v30
         FROM schema_entries e
         LEFT JOIN schema_volumes v ON v.source_id = e.source_id AND v.kind = e.kind
              AND v.name = e.name AND v.property = e.property AND v.hour >= $4
         WHERE e.source_id = $1 AND (CAST($5 AS text) IS NULL OR e.kind = $5)
           AND (CAST($6 AS text) IS NULL OR e.name = $6)
         GROUP BY e.kind, e.name, e.property, e.types, e.first_seen, e.last_seen
         ORDER BY {} {order}, e.kind, e.name, e.property
         LIMIT $7 OFFSET $8",
        q.sort.column()
    );
    let entries = db
        .query_map(
            &sql,
            args![source_id, h24, d7, d30, &q.kind, &q.name, q.limit, q.offset],
            entry,
        )
        .await?;
    let total = db
        .query_one(
            "SELECT count(*) FROM schema_entries WHERE source_id = $1
               AND (CAST($2 AS text) IS NULL OR kind = $2)
               AND (CAST($3 AS text) IS NULL OR name = $3)",
            args![source_id, &q.kind, &q.name],
        )
        .await?
        .get(0)?;
    let overflow = db
        .query_opt(
            "SELECT count FROM schema_overflow WHERE source_id = $1",
            args![source_id],
        )
        .await?;
    Ok(SchemaPage {
        entries,
        total,
        overflow: overflow.map(|r| r.get(0)).transpose()?.unwrap_or(0),
    })
}

pub(crate) async fn blocked_usage(
    db: &impl Db,
    source_id: &str,
    from: &str,
    to: &str,
) -> Result<Vec<BlockedDay>> {
    db.query_map(
        // Summed: PostgreSQL nodes count into rows of their own.
        "SELECT day, event, CAST(sum(count) AS bigint) FROM usage_blocked
         WHERE source_id = $1 AND day >= $2 AND day <= $3
         GROUP BY day, event ORDER BY day, event",
        args![source_id, from, to],
        |mut r| {
            Ok(BlockedDay {
                day: r.take(0)?,
                event: r.take(1)?,
                count: r.get(2)?,
            })
        },
    )
    .await
}

/// A source's usage per day from `from` to `to` (`YYYY-MM-DD`).
pub(crate) async fn usage(
    db: &impl Db,
    source_id: &str,
    from: &str,
    to: &str,
) -> Result<Vec<UsageDay>> {
    db.query_map(
        // Summed: PostgreSQL nodes count into rows of their own, and the
        // view adds the calls not yet counted there.
        "SELECT day, CAST(sum(api_calls) AS bigint), CAST(sum(events) AS bigint),
                CAST(sum(duplicates) AS bigint)
         FROM usage_days WHERE source_id = $1 AND day >= $2 AND day <= $3
         GROUP BY day ORDER BY day",
        args![source_id, from, to],
        |mut r| {
            Ok(UsageDay {
                day: r.take(0)?,
                api_calls: r.get(1)?,
                events: r.get(2)?,
                duplicates: r.get(3)?,
            })
        },
    )
    .await
}

/// How many schema entries `source_id` has stored: what a flush's new
/// entries are admitted against ([`admit`](crate::source_schema::admit)).
/// The entries' lookups and upserts are each backend's own (one row at a
/// time on SQLite's writer, arrays on PostgreSQL).
pub(crate) async fn stored_entries(db: &impl Db, source_id: &str) -> Result<u64> {
    let n: i64 = db
        .query_one(
            "SELECT count(*) FROM schema_entries WHERE source_id = $1",
            args![source_id],
        )
        .await?
        .get(0)?;
    Ok(u64::try_from(n).unwrap_or(0))
}

/// The end of a flush: what did not fit under the cap (`lost`, beside what
/// the node already counted) is added to the source's overflow, and
/// volumes older than the window are dropped.
pub(crate) async fn close_flush(db: &impl Db, f: &SchemaFlush, lost: u64) -> Result<()> {
    let overflow = f.overflow.saturating_add(lost);
    if overflow > 0 {
        db.execute(
            "INSERT INTO schema_overflow AS o (source_id, count) VALUES ($1, $2)
             ON CONFLICT (source_id) DO UPDATE SET count = o.count + excluded.count",
            args![&f.source_id, overflow],
        )
        .await?;
    }
    let horizon = f.now.timestamp_millis() - VOLUME_DAYS * 24 * 3_600_000;
    db.execute(
        "DELETE FROM schema_volumes WHERE source_id = $1 AND hour < $2",
        args![&f.source_id, horizon],
    )
    .await?;
    Ok(())
}
