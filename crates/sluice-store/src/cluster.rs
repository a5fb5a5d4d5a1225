//! [`ClusterStore`]: which nodes are alive, so that limits meant for the
//! whole deployment can be split among them.
//!
//! Each node records a heartbeat every few seconds; a node whose last
//! heartbeat is older than the time-to-live is no longer counted, so a
//! killed node drops out within that time, and a node that stops cleanly
//! leaves once its delivery engine has finished. Beats are stamped and
//! compared on the store's clock, so nodes whose clocks differ still agree
//! on who is silent. The embedded store serves one node, which it reports
//! alone without writing anything.
//!
//! Deliveries are leased under the claiming node's id: when a node drops
//! out, the others release its leases, so its deliveries move within the
//! time-to-live instead of the (longer) lease.

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::Result;

/// The membership as one heartbeat found it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Members {
    /// The nodes whose last heartbeat is within the time-to-live, the
    /// beating node included, sorted.
    pub live: Vec<String>,
    /// The nodes still in the membership whose last heartbeat is older:
    /// killed, or cut off from the store. Sorted.
    pub silent: Vec<String>,
}

/// Node membership.
#[async_trait]
pub trait ClusterStore: Send + Sync {
    /// Records that `node` is alive now, on the store's clock, and returns
    /// the membership: who beat within `ttl` of now and who did not. Rows
    /// of nodes silent for many times `ttl` are removed.
    async fn heartbeat(&self, node: &str, ttl: Duration) -> Result<Members>;
    /// Takes `node` out of the membership (a clean shutdown).
    async fn leave(&self, node: &str) -> Result<()>;

    /// The id this store claims deliveries under: the node's id in the
    /// membership, so the others can tell whose leases they are.
    fn node_id(&self) -> &str;

    /// Ends the leases `nodes` hold on deliveries due by `now`, because they
    /// dropped out of the membership: their deliveries are claimed again at
    /// once instead of when their leases would have ended. Returns how many
    /// were released. A node cut off rather than dead may still send some
    /// of them: delivery stays at least once.
    async fn release_leases(&self, nodes: &[String], now: DateTime<Utc>) -> Result<u64>;
}
