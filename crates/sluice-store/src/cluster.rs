//! [`ClusterStore`]: which nodes are alive, so that limits meant for the
//! whole deployment can be split among them.
//!
//! Each node records a heartbeat every few seconds; a node whose last
//! heartbeat is older than the time-to-live is no longer counted, so a
//! killed node drops out within that time, and a node that stops cleanly
//! leaves at once. The embedded store serves one node, which it reports
//! alone without writing anything.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::Result;

/// Node membership.
#[async_trait]
pub trait ClusterStore: Send + Sync {
    /// Records that `node` is alive at `now` and returns the nodes whose
    /// last heartbeat is within `ttl` of `now`, `node` included, sorted.
    /// Rows of nodes silent for many times `ttl` are removed.
    async fn heartbeat(&self, node: &str, now: DateTime<Utc>, ttl: Duration)
    -> Result<Vec<String>>;
    /// Takes `node` out of the membership (a clean shutdown).
    async fn leave(&self, node: &str) -> Result<()>;
}
