//! The audit log ([`crate::AuditStore`]): the work is `crate::queries::audit`,
//! on a pooled connection. Its table is created with the team's (`team.rs`).

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::PostgresStore;
use crate::queries::audit;
use crate::{AuditEntry, AuditQuery, AuditStore, NewAuditEntry, Result};

#[async_trait]
impl AuditStore for PostgresStore {
    async fn append_audit(&self, entry: NewAuditEntry) -> Result<i64> {
        audit::insert(&self.db().await?, &entry).await
    }

    async fn confirm_audit(
        &self,
        id: i64,
        resource_id: Option<String>,
        after: Option<String>,
    ) -> Result<()> {
        let (resource_id, after) = (resource_id.as_deref(), after.as_deref());
        audit::confirm(&self.db().await?, id, resource_id, after).await
    }

    async fn discard_audit(&self, id: i64) -> Result<()> {
        audit::discard(&self.db().await?, id).await
    }

    async fn list_audit(&self, query: AuditQuery) -> Result<Vec<AuditEntry>> {
        audit::list(&self.db().await?, &query).await
    }

    async fn prune_audit(&self, older_than: DateTime<Utc>, limit: usize) -> Result<u64> {
        audit::prune(&self.db().await?, older_than, limit).await
    }
}
