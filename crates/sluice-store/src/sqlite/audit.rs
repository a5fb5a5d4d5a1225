//! The audit log ([`crate::AuditStore`]): the work is `crate::queries::audit`,
//! run by the writer (changes) or a reader. Its table is created with the
//! team's (`team.rs`).

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::SqliteStore;
use crate::queries::audit;
use crate::sql::sqlite::{Lite, ready};
use crate::{AuditEntry, AuditQuery, AuditStore, NewAuditEntry, Result};

#[async_trait]
impl AuditStore for SqliteStore {
    async fn append_audit(&self, entry: NewAuditEntry) -> Result<i64> {
        self.writer
            .run(1, move |c| ready(audit::insert(&Lite(c), &entry)))
            .await
    }

    async fn confirm_audit(
        &self,
        id: i64,
        resource_id: Option<String>,
        after: Option<String>,
    ) -> Result<()> {
        self.writer
            .run(1, move |c| {
                ready(audit::confirm(
                    &Lite(c),
                    id,
                    resource_id.as_deref(),
                    after.as_deref(),
                ))
            })
            .await
    }

    async fn discard_audit(&self, id: i64) -> Result<()> {
        self.writer
            .run(1, move |c| ready(audit::discard(&Lite(c), id)))
            .await
    }

    async fn list_audit(&self, query: AuditQuery) -> Result<Vec<AuditEntry>> {
        self.readers
            .run(move |c| ready(audit::list(&Lite(c), &query)))
            .await
    }

    async fn prune_audit(&self, older_than: DateTime<Utc>, limit: usize) -> Result<u64> {
        self.writer
            .run(1, move |c| ready(audit::prune(&Lite(c), older_than, limit)))
            .await
    }
}
