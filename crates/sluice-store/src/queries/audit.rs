//! The audit log (see [`crate::audit`]); its table is created with the
//! team's. The team's changes write their entry with [`insert`] inside
//! their own transaction.

use chrono::{DateTime, Utc};

use crate::audit::REGULATION;
use crate::sql::{Db, Row, args};
use crate::{AuditEntry, AuditQuery, NewAuditEntry, Result};

const COLUMNS: &str = "id, at, actor_kind, actor_id, actor_name, via, ip, user_agent, \
                       resource, resource_id, action, before, after, confirmed";

/// Appends `entry` on `db` (inside the caller's transaction, if any);
/// returns its id.
pub(crate) async fn insert(db: &impl Db, entry: &NewAuditEntry) -> Result<i64> {
    db.query_one(
        "INSERT INTO audit_log (at, actor_kind, actor_id, actor_name, via, ip, user_agent,
             resource, resource_id, action, before, after, confirmed)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) RETURNING id",
        args![
            entry.at,
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
            entry.confirmed,
        ],
    )
    .await?
    .get(0)
}

fn entry(mut row: Row) -> Result<AuditEntry> {
    Ok(AuditEntry {
        id: row.get(0)?,
        entry: NewAuditEntry {
            at: row.get(1)?,
            actor_kind: row.take(2)?,
            actor_id: row.take(3)?,
            actor_name: row.take(4)?,
            via: row.take(5)?,
            ip: row.take(6)?,
            user_agent: row.take(7)?,
            resource: row.take(8)?,
            resource_id: row.take(9)?,
            action: row.take(10)?,
            before: row.take(11)?,
            after: row.take(12)?,
            confirmed: row.get(13)?,
        },
    })
}

pub(crate) async fn confirm(
    db: &impl Db,
    id: i64,
    resource_id: Option<&str>,
    after: Option<&str>,
) -> Result<()> {
    db.execute(
        "UPDATE audit_log SET confirmed = true,
             resource_id = coalesce($2, resource_id), after = coalesce($3, after)
         WHERE id = $1",
        args![id, resource_id, after],
    )
    .await?;
    Ok(())
}

pub(crate) async fn discard(db: &impl Db, id: i64) -> Result<()> {
    db.execute(
        "DELETE FROM audit_log WHERE id = $1 AND NOT confirmed",
        args![id],
    )
    .await?;
    Ok(())
}

/// Entries matching `q`, newest first; the id is the cursor.
pub(crate) async fn list(db: &impl Db, q: &AuditQuery) -> Result<Vec<AuditEntry>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM audit_log
         WHERE (CAST($1 AS text) IS NULL OR actor_name = $1 OR actor_id = $1)
           AND (CAST($2 AS text) IS NULL OR resource = $2)
           AND (CAST($3 AS text) IS NULL OR resource_id = $3)
           AND (CAST($4 AS bigint) IS NULL OR at >= $4)
           AND (CAST($5 AS bigint) IS NULL OR at < $5)
           AND (CAST($6 AS bigint) IS NULL OR id < $6)
         ORDER BY id DESC LIMIT $7"
    );
    db.query_map(
        &sql,
        args![
            &q.actor,
            &q.resource,
            &q.resource_id,
            q.since,
            q.until,
            q.before_id,
            q.limit,
        ],
        entry,
    )
    .await
}

/// Deletes up to `limit` of the oldest entries from before `older_than`,
/// never a regulation's.
pub(crate) async fn prune(db: &impl Db, older_than: DateTime<Utc>, limit: usize) -> Result<u64> {
    db.execute(
        "DELETE FROM audit_log WHERE id IN (
             SELECT id FROM audit_log WHERE at < $1 AND resource <> $2
             ORDER BY at LIMIT $3)",
        args![older_than, REGULATION, limit],
    )
    .await
}
