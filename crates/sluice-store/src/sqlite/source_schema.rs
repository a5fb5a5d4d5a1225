//! [`SchemaStore`] for SQLite: schema flushes run on the writer thread, one
//! job per source; the rest is `crate::queries::source_schema`.

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, params};

use super::SqliteStore;
use crate::queries::source_schema::{self as q, Doc};
use crate::source_schema::admit;
use crate::sql::sqlite::{Lite, ready};
use crate::{BlockedDay, Result, SchemaFlush, SchemaPage, SchemaQuery, SchemaStore};

fn flush(conn: &Connection, f: &SchemaFlush) -> Result<()> {
    let stored = ready(q::stored_entries(&Lite(conn), &f.source_id))?;
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
    ready(q::close_flush(&Lite(conn), f, lost))
}

#[async_trait]
impl SchemaStore for SqliteStore {
    async fn put_source_rules(&self, source_id: &str, rules: &str) -> Result<()> {
        let (id, doc) = (source_id.to_owned(), rules.to_owned());
        self.writer
            .run(1, move |c| {
                ready(q::put_doc(&Lite(c), Doc::SourceRules, &id, &doc))
            })
            .await
    }

    async fn list_source_rules(&self) -> Result<Vec<(String, String)>> {
        self.readers
            .run(|c| ready(q::list_docs(&Lite(c), Doc::SourceRules)))
            .await
    }

    async fn put_destination_filters(&self, destination_id: &str, filters: &str) -> Result<()> {
        let (id, doc) = (destination_id.to_owned(), filters.to_owned());
        self.writer
            .run(1, move |c| {
                ready(q::put_doc(&Lite(c), Doc::DestinationFilters, &id, &doc))
            })
            .await
    }

    async fn list_destination_filters(&self) -> Result<Vec<(String, String)>> {
        self.readers
            .run(|c| ready(q::list_docs(&Lite(c), Doc::DestinationFilters)))
            .await
    }

    async fn flush_schema(&self, f: SchemaFlush) -> Result<()> {
        let weight = f.entries.len();
        self.writer.run(weight, move |c| flush(c, &f)).await
    }

    async fn schema_entries(&self, source_id: &str, query: &SchemaQuery) -> Result<SchemaPage> {
        let (id, query) = (source_id.to_owned(), query.clone());
        self.readers
            .run(move |c| ready(q::entries(&Lite(c), &id, &query)))
            .await
    }

    async fn blocked_usage(
        &self,
        source_id: &str,
        from: &str,
        to: &str,
    ) -> Result<Vec<BlockedDay>> {
        let (id, from, to) = (source_id.to_owned(), from.to_owned(), to.to_owned());
        self.readers
            .run(move |c| ready(q::blocked_usage(&Lite(c), &id, &from, &to)))
            .await
    }
}
