//! [`SchemaStore`] for SQLite: rules and filters documents, schema flushes
//! (on the writer thread, one transaction per source) and schema reads.

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, params};

use super::SqliteStore;
use super::rows::{count, time};
use crate::records::now;
use crate::source_schema::{VOLUME_DAYS, admit};
use crate::{BlockedDay, Result, SchemaEntry, SchemaFlush, SchemaPage, SchemaQuery, SchemaStore};

fn put_doc(conn: &Connection, table: &str, key: &str, id: &str, doc: &str) -> Result<()> {
    let column = if table == "source_rules" {
        "rules"
    } else {
        "filters"
    };
    conn.execute(
        &format!(
            "INSERT INTO {table} ({key}, {column}, updated_at) VALUES (?1, ?2, ?3)
             ON CONFLICT ({key}) DO UPDATE SET {column} = excluded.{column},
                                               updated_at = excluded.updated_at"
        ),
        params![id, doc, now().timestamp_millis()],
    )?;
    Ok(())
}

fn list_docs(conn: &Connection, sql: &str) -> Result<Vec<(String, String)>> {
    let mut stmt = conn.prepare_cached(sql)?;
    let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

fn flush(conn: &Connection, f: &SchemaFlush) -> Result<()> {
    let stored: i64 = conn.query_row(
        "SELECT count(*) FROM schema_entries WHERE source_id = ?1",
        [&f.source_id],
        |r| r.get(0),
    )?;
    let mut exists = conn.prepare_cached(
        "SELECT 1 FROM schema_entries
         WHERE source_id = ?1 AND kind = ?2 AND name = ?3 AND property = ?4",
    )?;
    let mut known = Vec::with_capacity(f.entries.len());
    for e in &f.entries {
        let hit = exists
            .query_row(params![f.source_id, e.kind, e.name, e.property], |_| Ok(()))
            .optional()?;
        known.push(hit.is_some());
    }
    let stored = u64::try_from(stored).unwrap_or(0);
    let (keep, lost) = admit(&f.entries, |i| known[i], stored, f.max_entries);
    let mut upsert = conn.prepare_cached(
        "INSERT INTO schema_entries (source_id, kind, name, property, types, first_seen, last_seen)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT (source_id, kind, name, property) DO UPDATE SET
             types = types | excluded.types,
             first_seen = min(first_seen, excluded.first_seen),
             last_seen = max(last_seen, excluded.last_seen)",
    )?;
    let mut volume = conn.prepare_cached(
        "INSERT INTO schema_volumes (source_id, kind, name, property, hour, count)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT (source_id, kind, name, property, hour) DO UPDATE SET
             count = count + excluded.count",
    )?;
    for e in keep {
        let n = i64::try_from(e.count).unwrap_or(i64::MAX);
        upsert.execute(params![
            f.source_id,
            e.kind,
            e.name,
            e.property,
            e.types,
            e.first_seen_ms,
            e.last_seen_ms
        ])?;
        volume.execute(params![
            f.source_id,
            e.kind,
            e.name,
            e.property,
            e.hour(),
            n
        ])?;
    }
    let overflow = i64::try_from(f.overflow + lost).unwrap_or(i64::MAX);
    if overflow > 0 {
        conn.prepare_cached(
            "INSERT INTO schema_overflow (source_id, count) VALUES (?1, ?2)
             ON CONFLICT (source_id) DO UPDATE SET count = count + excluded.count",
        )?
        .execute(params![f.source_id, overflow])?;
    }
    let horizon = f.now.timestamp_millis() - VOLUME_DAYS * 24 * 3_600_000;
    conn.prepare_cached("DELETE FROM schema_volumes WHERE source_id = ?1 AND hour < ?2")?
        .execute(params![f.source_id, horizon])?;
    Ok(())
}

fn entries(conn: &Connection, source_id: &str, q: &SchemaQuery) -> Result<SchemaPage> {
    let (h24, d7, d30) = q.windows();
    let order = if q.descending { "DESC" } else { "ASC" };
    let sql = format!(
        "SELECT e.kind, e.name, e.property, e.types, e.first_seen, e.last_seen,
                COALESCE(SUM(CASE WHEN v.hour >= ?2 THEN v.count END), 0) AS v24,
                COALESCE(SUM(CASE WHEN v.hour >= ?3 THEN v.count END), 0) AS v7,
                COALESCE(SUM(v.count), 0) AS v30
         FROM schema_entries e
         LEFT JOIN schema_volumes v ON v.source_id = e.source_id AND v.kind = e.kind
              AND v.name = e.name AND v.property = e.property AND v.hour >= ?4
         WHERE e.source_id = ?1 AND (?5 IS NULL OR e.kind = ?5) AND (?6 IS NULL OR e.name = ?6)
         GROUP BY e.kind, e.name, e.property
         ORDER BY {} {order}, e.kind, e.name, e.property
         LIMIT ?7 OFFSET ?8",
        q.sort.column()
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(
        params![
            source_id,
            h24,
            d7,
            d30,
            q.kind,
            q.name,
            i64::from(q.limit),
            i64::from(q.offset)
        ],
        |r| {
            Ok(SchemaEntry {
                kind: r.get(0)?,
                name: r.get(1)?,
                property: r.get(2)?,
                types: r.get(3)?,
                first_seen: time(r, 4)?,
                last_seen: time(r, 5)?,
                volume_24h: count(r, 6)?,
                volume_7d: count(r, 7)?,
                volume_30d: count(r, 8)?,
            })
        },
    )?;
    let entries = rows.collect::<rusqlite::Result<Vec<_>>>()?;
    let total: i64 = conn.query_row(
        "SELECT count(*) FROM schema_entries
         WHERE source_id = ?1 AND (?2 IS NULL OR kind = ?2) AND (?3 IS NULL OR name = ?3)",
        params![source_id, q.kind, q.name],
        |r| r.get(0),
    )?;
    let overflow: Option<i64> = conn
        .query_row(
            "SELECT count FROM schema_overflow WHERE source_id = ?1",
            [source_id],
            |r| r.get(0),
        )
        .optional()?;
    Ok(SchemaPage {
        entries,
        total: u64::try_from(total).unwrap_or(0),
        overflow: overflow.and_then(|o| u64::try_from(o).ok()).unwrap_or(0),
    })
}

fn blocked_usage(
    conn: &Connection,
    source_id: &str,
    from: &str,
    to: &str,
) -> Result<Vec<BlockedDay>> {
    let mut stmt = conn.prepare_cached(
        "SELECT day, event, count FROM usage_blocked
         WHERE source_id = ?1 AND day >= ?2 AND day <= ?3 ORDER BY day, event",
    )?;
    let rows = stmt.query_map(params![source_id, from, to], |r| {
        Ok(BlockedDay {
            day: r.get(0)?,
            event: r.get(1)?,
            count: count(r, 2)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

#[async_trait]
impl SchemaStore for SqliteStore {
    async fn put_source_rules(&self, source_id: &str, rules: &str) -> Result<()> {
        let (id, doc) = (source_id.to_owned(), rules.to_owned());
        self.writer
            .run(1, move |c| {
                put_doc(c, "source_rules", "source_id", &id, &doc)
            })
            .await
    }

    async fn list_source_rules(&self) -> Result<Vec<(String, String)>> {
        self.readers
            .run(|c| list_docs(c, "SELECT source_id, rules FROM source_rules"))
            .await
    }

    async fn put_destination_filters(&self, destination_id: &str, filters: &str) -> Result<()> {
        let (id, doc) = (destination_id.to_owned(), filters.to_owned());
        self.writer
            .run(1, move |c| {
                put_doc(c, "destination_filters", "destination_id", &id, &doc)
            })
            .await
    }

    async fn list_destination_filters(&self) -> Result<Vec<(String, String)>> {
        self.readers
            .run(|c| list_docs(c, "SELECT destination_id, filters FROM destination_filters"))
            .await
    }

    async fn flush_schema(&self, f: SchemaFlush) -> Result<()> {
        let weight = f.entries.len();
        self.writer.run(weight, move |c| flush(c, &f)).await
    }

    async fn schema_entries(&self, source_id: &str, query: &SchemaQuery) -> Result<SchemaPage> {
        let (id, q) = (source_id.to_owned(), query.clone());
        self.readers.run(move |c| entries(c, &id, &q)).await
    }

    async fn blocked_usage(
        &self,
        source_id: &str,
        from: &str,
        to: &str,
    ) -> Result<Vec<BlockedDay>> {
        let (id, from, to) = (source_id.to_owned(), from.to_owned(), to.to_owned());
        self.readers
            .run(move |c| blocked_usage(c, &id, &from, &to))
            .await
    }
}
