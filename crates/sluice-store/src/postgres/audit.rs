//! The audit log ([`crate::AuditStore`]); its table is created with the
//! team's (`team.rs`).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use deadpool_postgres::GenericClient;
use tokio_postgres::Row;

use super::PostgresStore;
use super::rows::{backend, get, ms, time};
use crate::audit::REGULATION;
use crate::{AuditEntry, AuditQuery, AuditStore, NewAuditEntry, Result};

const COLUMNS: &str = "id, at, actor_kind, actor_id, actor_name, via, ip, user_agent, \
                       resource, resource_id, action, before, after, confirmed";

/// Appends `entry` on `client` (inside the caller's transaction, if any);
/// returns its id.
pub(super) async fn insert(client: &impl GenericClient, entry: &NewAuditEntry) -> Result<i64> {
    let stmt = client
        .prepare_cached(
            "INSERT INTO audit_log (at, actor_kind, actor_id, actor_name, via, ip, user_agent,
                 resource, resource_id, action, before, after, confirmed)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING id",
        )
        .await
        .map_err(backend)?;
    let row = client
        .query_one(
            &stmt,
            &[
                &ms(entry.at),
                &entry.actor_kind,
                &entry.actor_id,
                &entry.actor_name,
                &entry.via,
                &entry.ip,
                &entry.user_agent,
                &entry.resource,
                &entry.resource_id,
                &entry.action,
                &entry.before,
                &entry.after,
                &entry.confirmed,
            ],
        )
        .await
        .map_err(backend)?;
    get(&row, 0)
}

fn entry_row(row: &Row) -> Result<AuditEntry> {
    Ok(AuditEntry {
        id: get(row, 0)?,
        entry: NewAuditEntry {
            at: time(row, 1)?,
            actor_kind: get(row, 2)?,
            actor_id: get(row, 3)?,
            actor_name: get(row, 4)?,
            via: get(row, 5)?,
            ip: get(row, 6)?,
            user_agent: get(row, 7)?,
            resource: get(row, 8)?,
            resource_id: get(row, 9)?,
            action: get(row, 10)?,
            before: get(row, 11)?,
            after: get(row, 12)?,
            confirmed: get(row, 13)?,
        },
    })
}

#[async_trait]
impl AuditStore for PostgresStore {
    async fn append_audit(&self, entry: NewAuditEntry) -> Result<i64> {
        insert(&self.client().await?, &entry).await
    }

    async fn confirm_audit(
        &self,
        id: i64,
        resource_id: Option<String>,
        after: Option<String>,
    ) -> Result<()> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(
                "UPDATE audit_log SET confirmed = true,
                     resource_id = coalesce($2, resource_id), after = coalesce($3, after)
                 WHERE id = $1",
            )
            .await
            .map_err(backend)?;
        client
            .execute(&stmt, &[&id, &resource_id, &after])
            .await
            .map_err(backend)?;
        Ok(())
    }

    async fn discard_audit(&self, id: i64) -> Result<()> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached("DELETE FROM audit_log WHERE id = $1 AND NOT confirmed")
            .await
            .map_err(backend)?;
        client.execute(&stmt, &[&id]).await.map_err(backend)?;
        Ok(())
    }

    async fn list_audit(&self, q: AuditQuery) -> Result<Vec<AuditEntry>> {
        let client = self.client().await?;
        let sql = format!(
            "SELECT {COLUMNS} FROM audit_log
             WHERE ($1::text IS NULL OR actor_name = $1 OR actor_id = $1)
               AND ($2::text IS NULL OR resource = $2)
               AND ($3::text IS NULL OR resource_id = $3)
               AND ($4::bigint IS NULL OR at >= $4)
               AND ($5::bigint IS NULL OR at < $5)
               AND ($6::bigint IS NULL OR id < $6)
             ORDER BY id DESC LIMIT $7"
        );
        let stmt = client.prepare_cached(&sql).await.map_err(backend)?;
        let limit = i64::try_from(q.limit).unwrap_or(i64::MAX);
        let rows = client
            .query(
                &stmt,
                &[
                    &q.actor,
                    &q.resource,
                    &q.resource_id,
                    &q.since.map(ms),
                    &q.until.map(ms),
                    &q.before_id,
                    &limit,
                ],
            )
            .await
            .map_err(backend)?;
        rows.iter().map(entry_row).collect()
    }

    async fn prune_audit(&self, older_than: DateTime<Utc>, limit: usize) -> Result<u64> {
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(
                "DELETE FROM audit_log WHERE id IN (
                     SELECT id FROM audit_log WHERE at < $1 AND resource <> $2
                     ORDER BY at LIMIT $3)",
            )
            .await
            .map_err(backend)?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        client
            .execute(&stmt, &[&ms(older_than), &REGULATION, &limit])
            .await
            .map_err(backend)
    }
}
