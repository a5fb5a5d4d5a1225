//! [`SchemaStore`] for PostgreSQL; all but the flush is
//! `crate::queries::source_schema`. A schema flush is one transaction per
//! source, serialised per source across nodes by a transaction-scoped
//! advisory lock (so two nodes flushing at once cannot both take the last
//! slots under the cap), and a fixed number of statements per flush.

use async_trait::async_trait;
use deadpool_postgres::Client;

use super::PostgresStore;
use super::rows::{backend, big, get};
use crate::queries::source_schema::{self as q, Doc};
use crate::source_schema::admit;
use crate::sql::postgres::PgRef;
use crate::{BlockedDay, Result, SchemaFlush, SchemaPage, SchemaQuery, SchemaStore};

/// First key of the flush advisory lock ("SCHM"); the second is the source.
const FLUSH_LOCK: i32 = 0x5343_484d;

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
    let stored = q::stored_entries(&PgRef(&tx), &f.source_id).await?;
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
    q::close_flush(&PgRef(&tx), f, lost).await?;
    tx.commit().await.map_err(backend)
}

#[async_trait]
impl SchemaStore for PostgresStore {
    async fn put_source_rules(&self, source_id: &str, rules: &str) -> Result<()> {
        q::put_doc(&self.db().await?, Doc::SourceRules, source_id, rules).await
    }

    async fn list_source_rules(&self) -> Result<Vec<(String, String)>> {
        q::list_docs(&self.db().await?, Doc::SourceRules).await
    }

    async fn put_destination_filters(&self, destination_id: &str, filters: &str) -> Result<()> {
        q::put_doc(
            &self.db().await?,
            Doc::DestinationFilters,
            destination_id,
            filters,
        )
        .await
    }

    async fn list_destination_filters(&self) -> Result<Vec<(String, String)>> {
        q::list_docs(&self.db().await?, Doc::DestinationFilters).await
    }

    async fn flush_schema(&self, f: SchemaFlush) -> Result<()> {
        flush(&mut self.client().await?, &f).await
    }

    async fn schema_entries(&self, source_id: &str, query: &SchemaQuery) -> Result<SchemaPage> {
        q::entries(&self.db().await?, source_id, query).await
    }

    async fn blocked_usage(
        &self,
        source_id: &str,
        from: &str,
        to: &str,
    ) -> Result<Vec<BlockedDay>> {
        q::blocked_usage(&self.db().await?, source_id, from, to).await
    }
}
