//! [`SchemaStore`] for PostgreSQL. A schema flush is one transaction per
//! source, serialised per source across nodes by a transaction-scoped
//! advisory lock (so two nodes flushing at once cannot both take the last
//! slots under the cap), and a fixed number of statements per flush.

use async_trait::async_trait;
use deadpool_postgres::Client;

use super::PostgresStore;
use super::rows::{backend, big, get, time, unsigned};
use crate::records::now;
use crate::source_schema::{VOLUME_DAYS, admit};
use crate::{BlockedDay, Result, SchemaEntry, SchemaFlush, SchemaPage, SchemaQuery, SchemaStore};

/// First key of the flush advisory lock ("SCHM"); the second is the source.
const FLUSH_LOCK: i32 = 0x5343_484d;

async fn put_doc(client: &Client, sql: &str, id: &str, doc: &str) -> Result<()> {
    client
        .execute(sql, &[&id, &doc, &now().timestamp_millis()])
        .await
        .map_err(backend)?;
    Ok(())
}

async fn list_docs(client: &Client, sql: &str) -> Result<Vec<(String, String)>> {
    let rows = client.query(sql, &[]).await.map_err(backend)?;
    rows.iter().map(|r| Ok((get(r, 0)?, get(r, 1)?))).collect()
}

async fn flush(client: &mut Client, f: &SchemaFlush) -> Result<()> {
    let tx = client.transaction().await.map_err(backend)?;
    tx.execute(
        "SELECT pg_advisory_xact_lock($1, hashtext($2))",
        &[&FLUSH_LOCK, &f.source_id],
    )
    .await
    .map_err(backend)?;
    let kinds: Vec<&str> = f.entries.iter().map(|e| e.kind.as_str()).collect();
    let names: Vec<&str> = f.entries.iter().map(|e| e.name.as_str()).collect();
    let props: Vec<&str> = f.entries.iter().map(|e| e.property.as_str()).collect();
    let stored: i64 = get(
        &tx.query_one(
            "SELECT count(*) FROM schema_entries WHERE source_id = $1",
            &[&f.source_id],
        )
        .await
        .map_err(backend)?,
        0,
    )?;
    let rows = tx
        .query(
            "SELECT u.i FROM UNNEST($2::text[], $3::text[], $4::text[]) WITH ORDINALITY
                 AS u(k, n, p, i)
             JOIN schema_entries e ON e.source_id = $1 AND e.kind = u.k AND e.name = u.n
                                  AND e.property = u.p",
            &[&f.source_id, &kinds, &names, &props],
        )
        .await
        .map_err(backend)?;
    let mut known = vec![false; f.entries.len()];
    for r in &rows {
        let i: i64 = get(r, 0)?;
        if let Some(slot) = usize::try_from(i - 1).ok().and_then(|i| known.get_mut(i)) {
            *slot = true;
        }
    }
    let stored = u64::try_from(stored).unwrap_or(0);
    let (keep, lost) = admit(&f.entries, |i| known[i], stored, f.max_entries);
    let (mut k, mut n, mut p, mut t, mut first, mut last, mut hour, mut count) = (
        vec![],
        vec![],
        vec![],
        vec![],
        vec![],
        vec![],
        vec![],
        vec![],
    );
    for e in keep {
        k.push(e.kind.as_str());
        n.push(e.name.as_str());
        p.push(e.property.as_str());
        t.push(e.types);
        first.push(e.first_seen_ms);
        last.push(e.last_seen_ms);
        hour.push(e.hour());
        count.push(big(e.count));
    }
    if !k.is_empty() {
        tx.execute(
            "INSERT INTO schema_entries AS e (source_id, kind, name, property, types, first_seen,
                                              last_seen)
             SELECT $1, * FROM UNNEST($2::text[], $3::text[], $4::text[], $5::bigint[],
                                      $6::bigint[], $7::bigint[])
             ON CONFLICT (source_id, kind, name, property) DO UPDATE SET
                 types = e.types | excluded.types,
                 first_seen = LEAST(e.first_seen, excluded.first_seen),
                 last_seen = GREATEST(e.last_seen, excluded.last_seen)",
            &[&f.source_id, &k, &n, &p, &t, &first, &last],
        )
        .await
        .map_err(backend)?;
        tx.execute(
            "INSERT INTO schema_volumes AS v (source_id, kind, name, property, hour, count)
             SELECT $1, * FROM UNNEST($2::text[], $3::text[], $4::text[], $5::bigint[],
                                      $6::bigint[])
             ON CONFLICT (source_id, kind, name, property, hour) DO UPDATE SET
                 count = v.count + excluded.count",
            &[&f.source_id, &k, &n, &p, &hour, &count],
        )
        .await
        .map_err(backend)?;
    }
    let overflow = big(f.overflow + lost);
    if overflow > 0 {
        tx.execute(
            "INSERT INTO schema_overflow AS o (source_id, count) VALUES ($1, $2)
             ON CONFLICT (source_id) DO UPDATE SET count = o.count + excluded.count",
            &[&f.source_id, &overflow],
        )
        .await
        .map_err(backend)?;
    }
    let horizon = f.now.timestamp_millis() - VOLUME_DAYS * 24 * 3_600_000;
    tx.execute(
        "DELETE FROM schema_volumes WHERE source_id = $1 AND hour < $2",
        &[&f.source_id, &horizon],
    )
    .await
    .map_err(backend)?;
    tx.commit().await.map_err(backend)
}

async fn entries(client: &Client, source_id: &str, q: &SchemaQuery) -> Result<SchemaPage> {
    let (h24, d7, d30) = q.windows();
    let order = if q.descending { "DESC" } else { "ASC" };
    let sql = format!(
        "SELECT e.kind, e.name, e.property, e.types, e.first_seen, e.last_seen,
                COALESCE(SUM(v.count) FILTER (WHERE v.hour >= $2), 0)::bigint AS v24,
                COALESCE(SUM(v.count) FILTER (WHERE v.hour >= $3), 0)::bigint AS v7,
                COALESCE(SUM(v.count), 0)::bigint AS v30
         FROM schema_entries e
         LEFT JOIN schema_volumes v ON v.source_id = e.source_id AND v.kind = e.kind
              AND v.name = e.name AND v.property = e.property AND v.hour >= $4
         WHERE e.source_id = $1 AND ($5::text IS NULL OR e.kind = $5)
           AND ($6::text IS NULL OR e.name = $6)
         GROUP BY e.kind, e.name, e.property, e.types, e.first_seen, e.last_seen
         ORDER BY {} {order}, e.kind, e.name, e.property
         LIMIT $7 OFFSET $8",
        q.sort.column()
    );
    let rows = client
        .query(
            &sql,
            &[
                &source_id,
                &h24,
                &d7,
                &d30,
                &q.kind,
                &q.name,
                &i64::from(q.limit),
                &i64::from(q.offset),
            ],
        )
        .await
        .map_err(backend)?;
    let entries = rows
        .iter()
        .map(|r| {
            Ok(SchemaEntry {
                kind: get(r, 0)?,
                name: get(r, 1)?,
                property: get(r, 2)?,
                types: get(r, 3)?,
                first_seen: time(r, 4)?,
                last_seen: time(r, 5)?,
                volume_24h: unsigned(r, 6)?,
                volume_7d: unsigned(r, 7)?,
                volume_30d: unsigned(r, 8)?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let total = client
        .query_one(
            "SELECT count(*) FROM schema_entries WHERE source_id = $1
               AND ($2::text IS NULL OR kind = $2) AND ($3::text IS NULL OR name = $3)",
            &[&source_id, &q.kind, &q.name],
        )
        .await
        .map_err(backend)?;
    let overflow = client
        .query_opt(
            "SELECT count FROM schema_overflow WHERE source_id = $1",
            &[&source_id],
        )
        .await
        .map_err(backend)?;
    Ok(SchemaPage {
        entries,
        total: unsigned(&total, 0)?,
        overflow: match overflow {
            Some(row) => unsigned(&row, 0)?,
            None => 0,
        },
    })
}

#[async_trait]
impl SchemaStore for PostgresStore {
    async fn put_source_rules(&self, source_id: &str, rules: &str) -> Result<()> {
        let sql = "INSERT INTO source_rules (source_id, rules, updated_at) VALUES ($1, $2, $3)
                   ON CONFLICT (source_id) DO UPDATE SET rules = excluded.rules,
                                                         updated_at = excluded.updated_at";
        put_doc(&self.client().await?, sql, source_id, rules).await
    }

    async fn list_source_rules(&self) -> Result<Vec<(String, String)>> {
        list_docs(
            &self.client().await?,
            "SELECT source_id, rules FROM source_rules",
        )
        .await
    }

    async fn put_destination_filters(&self, destination_id: &str, filters: &str) -> Result<()> {
        let sql = "INSERT INTO destination_filters (destination_id, filters, updated_at)
                   VALUES ($1, $2, $3)
                   ON CONFLICT (destination_id) DO UPDATE SET filters = excluded.filters,
                                                              updated_at = excluded.updated_at";
        put_doc(&self.client().await?, sql, destination_id, filters).await
    }

    async fn list_destination_filters(&self) -> Result<Vec<(String, String)>> {
        list_docs(
            &self.client().await?,
            "SELECT destination_id, filters FROM destination_filters",
        )
        .await
    }

    async fn flush_schema(&self, f: SchemaFlush) -> Result<()> {
        flush(&mut self.client().await?, &f).await
    }

    async fn schema_entries(&self, source_id: &str, query: &SchemaQuery) -> Result<SchemaPage> {
        entries(&self.client().await?, source_id, query).await
    }

    async fn blocked_usage(
        &self,
        source_id: &str,
        from: &str,
        to: &str,
    ) -> Result<Vec<BlockedDay>> {
        let rows = self
            .client()
            .await?
            .query(
                "SELECT day, event, count FROM usage_blocked
                 WHERE source_id = $1 AND day >= $2 AND day <= $3 ORDER BY day, event",
                &[&source_id, &from, &to],
            )
            .await
            .map_err(backend)?;
        rows.iter()
            .map(|r| {
                Ok(BlockedDay {
                    day: get(r, 0)?,
                    event: get(r, 1)?,
                    count: unsigned(r, 2)?,
                })
            })
            .collect()
    }
}
