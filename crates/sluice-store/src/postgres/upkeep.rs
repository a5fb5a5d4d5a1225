//! The pool's upkeep, one task per store: idle connections go back to the
//! server, and a database migrated past this node's schema stops the node's
//! use of it.
//!
//! - **Idle connections.** `deadpool` keeps every connection it ever opened;
//!   after a burst a node would hold `pool_size` server processes for good.
//!   Every `upkeep_interval` the connections unused for `idle_timeout` are
//!   closed ([`super::PostgresConfig`]); the pool opens new ones when work
//!   returns.
//! - **A newer schema.** Migrations run at start, and a node refuses to start
//!   on a schema newer than it knows. A node already running when another
//!   node, upgraded, migrates the database would go on writing with old
//!   assumptions. The task reads the applied version at each round; past
//!   the known one, the pool's hooks refuse every connection from then on,
//!   so each store call fails with the reason (ingest answers 503) and the
//!   error is logged: the node is to be upgraded or stopped.

use std::sync::Arc;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use deadpool_postgres::{HookError, Pool};

use super::rows::{backend, pool_error};
use crate::Result;

/// The schema version this node knows, and the newer one it has seen, if
/// any (0 while none).
#[derive(Clone)]
pub(super) struct SchemaGuard {
    known: i32,
    newer: Arc<AtomicI32>,
}

impl SchemaGuard {
    pub(super) fn new(known: i32) -> Self {
        SchemaGuard {
            known,
            newer: Arc::new(AtomicI32::new(0)),
        }
    }

    /// `Err` with the reason once a newer schema was seen.
    pub(super) fn check(&self) -> std::result::Result<(), HookError> {
        match self.newer.load(Ordering::Acquire) {
            0 => Ok(()),
            newer => Err(HookError::message(format!(
                "database schema is at version {newer}, newer than this Sluice knows ({}): \
                 another node was upgraded; upgrade or stop this one",
                self.known
            ))),
        }
    }

    fn saw(&self, version: i32) -> bool {
        version > self.known && self.newer.swap(version, Ordering::AcqRel) == 0
    }
}

/// Starts the task, a round every `every`; it ends when the pool is closed.
pub(super) fn spawn(pool: Pool, guard: SchemaGuard, every: Duration, idle: Duration) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every.max(Duration::from_millis(10)));
        tick.tick().await;
        while !pool.is_closed() {
            tick.tick().await;
            pool.retain(|_, metrics| metrics.last_used() < idle);
            match applied_version(&pool).await {
                Ok(version) if guard.saw(version) => {
                    tracing::error!(
                        version,
                        known = guard.known,
                        "database schema is newer than this Sluice knows: refusing to use \
                         the database; upgrade or stop this node"
                    );
                    pool.retain(|_, _| false);
                }
                // A failed read (the database is away, or this node already
                // refuses) says nothing new.
                Ok(_) | Err(_) => {}
            }
        }
    });
}

async fn applied_version(pool: &Pool) -> Result<i32> {
    let client = pool.get().await.map_err(pool_error)?;
    let row = client
        .query_one(
            "SELECT COALESCE(max(version), 0) FROM schema_migrations",
            &[],
        )
        .await
        .map_err(backend)?;
    super::rows::get(&row, 0)
}
