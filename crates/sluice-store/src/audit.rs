//! [`AuditStore`]: the audit log. One entry per change made through the
//! admin API, the dashboard or the command line: who, when, what (the
//! resource, the action, before and after with secrets masked by the
//! caller) and from where.
//!
//! # Invariants
//! - **Ids only grow.** Entries are numbered in the order they were
//!   appended and an id is never reused, even after pruning: the cursor of
//!   [`AuditQuery::before_id`] never skips or repeats an entry.
//! - **Written ahead.** A change the store cannot make in the transaction
//!   of its entry is recorded in two steps: [`AuditStore::append_audit`]
//!   with `confirmed: false` before the change, then
//!   [`AuditStore::confirm_audit`] after it, or
//!   [`AuditStore::discard_audit`] when it was refused. A crash in between
//!   leaves an unconfirmed entry: never a committed change without one.
//! - **Regulations are kept.** [`AuditStore::prune_audit`] never deletes an
//!   entry whose resource is [`REGULATION`].

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::Result;

/// The resource name of regulation entries, which pruning keeps.
pub const REGULATION: &str = "regulation";

/// An entry to append.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewAuditEntry {
    pub at: DateTime<Utc>,
    /// `user`, `token`, `admin_token` or `operator`.
    pub actor_kind: String,
    /// The user's or token's id.
    pub actor_id: Option<String>,
    /// The username, the token's name, or `admin token`.
    pub actor_name: String,
    /// `api`, `dashboard` or `cli`.
    pub via: String,
    pub ip: Option<String>,
    pub user_agent: Option<String>,
    /// `source`, `destination`, `user`, `regulation`, ...
    pub resource: String,
    pub resource_id: Option<String>,
    /// `create`, `update`, `delete`, ...
    pub action: String,
    /// The resource before the change, JSON, secrets masked.
    pub before: Option<String>,
    /// The resource after the change, JSON, secrets masked.
    pub after: Option<String>,
    /// False for an entry written ahead of its change and not yet confirmed.
    pub confirmed: bool,
}

/// An entry of the log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditEntry {
    pub id: i64,
    #[serde(flatten)]
    pub entry: NewAuditEntry,
}

/// Which entries to list, newest first.
#[derive(Debug, Clone, Default)]
pub struct AuditQuery {
    /// Entries whose actor's name or id is this.
    pub actor: Option<String>,
    pub resource: Option<String>,
    pub resource_id: Option<String>,
    /// At or after.
    pub since: Option<DateTime<Utc>>,
    /// Strictly before.
    pub until: Option<DateTime<Utc>>,
    /// The cursor: entries with a smaller id.
    pub before_id: Option<i64>,
    pub limit: usize,
}

/// The audit log. Every method is atomic.
#[async_trait]
pub trait AuditStore: Send + Sync {
    /// Appends an entry; returns its id.
    async fn append_audit(&self, entry: NewAuditEntry) -> Result<i64>;
    /// Marks an entry written ahead as confirmed, with the resource id (of
    /// a created resource) and the state after the change when given.
    async fn confirm_audit(
        &self,
        id: i64,
        resource_id: Option<String>,
        after: Option<String>,
    ) -> Result<()>;
    /// Deletes an unconfirmed entry whose change was refused.
    async fn discard_audit(&self, id: i64) -> Result<()>;
    /// Entries matching the query, newest first, at most `limit`.
    async fn list_audit(&self, query: AuditQuery) -> Result<Vec<AuditEntry>>;
    /// Deletes up to `limit` of the oldest entries from before `older_than`,
    /// except those of regulations; returns how many.
    async fn prune_audit(&self, older_than: DateTime<Utc>, limit: usize) -> Result<u64>;
}
