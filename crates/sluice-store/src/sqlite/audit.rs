//! The audit log ([`crate::AuditStore`]); its table is created with the
//! team's (`team.rs`).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, Row, params};

use super::SqliteStore;
use super::rows::{ms, time};
use crate::audit::REGULATION;
use crate::{AuditEntry, AuditQuery, AuditStore, NewAuditEntry, Result};

const COLUMNS: &str = "id, at, actor_kind, actor_id, actor_name, via, ip, user_agent, \
                       resource, resource_id, action, before, after, confirmed";

/// Appends `entry` on `conn` (inside the caller's transaction); returns its id.
pub(super) fn insert(conn: &Connection, entry: &NewAuditEntry) -> Result<i64> {
    conn.prepare_cached(
        "INSERT INTO audit_log (at, actor_kind, actor_id, actor_name, via, ip, user_agent,
             resource, resource_id, action, before, after, confirmed)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
    )?
    .execute(params![
        ms(entry.at),
        entry.actor_kind,
        entry.actor_id,
        entry.actor_name,
        entry.via,
        entry.ip,
        entry.user_agent,
        entry.resource,
        entry.resource_id,
        entry.action,
        entry.before,
        entry.after,
        entry.confirmed,
    ])?;
    Ok(conn.last_insert_rowid())
}

fn entry_row(row: &Row<'_>) -> rusqlite::Result<AuditEntry> {
    Ok(AuditEntry {
        id: row.get(0)?,
        entry: NewAuditEntry {
            at: time(row, 1)?,
            actor_kind: row.get(2)?,
            actor_id: row.get(3)?,
            actor_name: row.get(4)?,
            via: row.get(5)?,
            ip: row.get(6)?,
            user_agent: row.get(7)?,
            resource: row.get(8)?,
            resource_id: row.get(9)?,
            action: row.get(10)?,
            before: row.get(11)?,
            after: row.get(12)?,
            confirmed: row.get(13)?,
        },
    })
}

fn list(conn: &Connection, q: &AuditQuery) -> Result<Vec<AuditEntry>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM audit_log
         WHERE (?1 IS NULL OR actor_name = ?1 OR actor_id = ?1)
           AND (?2 IS NULL OR resource = ?2)
           AND (?3 IS NULL OR resource_id = ?3)
           AND (?4 IS NULL OR at >= ?4)
           AND (?5 IS NULL OR at < ?5)
           AND (?6 IS NULL OR id < ?6)
         ORDER BY id DESC LIMIT ?7"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(
        params![
            q.actor,
            q.resource,
            q.resource_id,
            q.since.map(ms),
            q.until.map(ms),
            q.before_id,
            i64::try_from(q.limit).unwrap_or(i64::MAX),
        ],
        entry_row,
    )?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

#[async_trait]
impl AuditStore for SqliteStore {
    async fn append_audit(&self, entry: NewAuditEntry) -> Result<i64> {
        self.writer.run(1, move |c| insert(c, &entry)).await
    }

    async fn confirm_audit(
        &self,
        id: i64,
        resource_id: Option<String>,
        after: Option<String>,
    ) -> Result<()> {
        self.writer
            .run(1, move |c| {
                c.prepare_cached(
                    "UPDATE audit_log SET confirmed = 1,
                         resource_id = coalesce(?2, resource_id), after = coalesce(?3, after)
                     WHERE id = ?1",
                )?
                .execute(params![id, resource_id, after])?;
                Ok(())
            })
            .await
    }

    async fn discard_audit(&self, id: i64) -> Result<()> {
        self.writer
            .run(1, move |c| {
                c.prepare_cached("DELETE FROM audit_log WHERE id = ?1 AND confirmed = 0")?
                    .execute([id])?;
                Ok(())
            })
            .await
    }

    async fn list_audit(&self, query: AuditQuery) -> Result<Vec<AuditEntry>> {
        self.readers.run(move |c| list(c, &query)).await
    }

    async fn prune_audit(&self, older_than: DateTime<Utc>, limit: usize) -> Result<u64> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        self.writer
            .run(1, move |c| {
                let n = c
                    .prepare_cached(
                        "DELETE FROM audit_log WHERE id IN (
                             SELECT id FROM audit_log WHERE at < ?1 AND resource <> ?2
                             ORDER BY at LIMIT ?3)",
                    )?
                    .execute(params![ms(older_than), REGULATION, limit])?;
                Ok(n as u64)
            })
            .await
    }
}
