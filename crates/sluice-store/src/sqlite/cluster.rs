//! Membership of the embedded store: one process owns the file (see
//! `lock.rs`), so the only live node is the caller. Nothing is written.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::SqliteStore;
use crate::{ClusterStore, Members, Result};

#[async_trait]
impl ClusterStore for SqliteStore {
    async fn heartbeat(&self, node: &str, _ttl: Duration) -> Result<Members> {
        Ok(Members {
            live: vec![node.to_owned()],
            silent: Vec::new(),
        })
    }

    async fn leave(&self, _node: &str) -> Result<()> {
        Ok(())
    }

    fn node_id(&self) -> &str {
        "local"
    }

    /// Nothing to release: no other node holds leases on this file.
    async fn release_leases(&self, _nodes: &[String], _now: DateTime<Utc>) -> Result<u64> {
        Ok(0)
    }
}
