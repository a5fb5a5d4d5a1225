//! Refusing a connection pooler in transaction mode.
//!
//! Sluice keeps state on each connection: prepared statements (cached per
//! connection, named on the server) and, with a configured schema, the
//! `search_path`. A pooler in transaction mode (PgBouncer's
//! `pool_mode = transaction`) hands each transaction to whichever server
//! connection is free, so that state is lost between transactions: every
//! statement would then fail with "prepared statement does not exist".
//! Rather than start and fail every call, a node checks at start and
//! refuses with the reason. Session pooling keeps a server connection per
//! client connection, and is fine.
//!
//! The check uses the simple query protocol (no prepared statements) on two
//! pooled connections: a direct connection keeps its server process for
//! life, so a backend process id that changes on one connection, or that
//! two connections share, can only come from a pooler multiplexing them.

use deadpool_postgres::Pool;

use super::rows::{backend, pool_error};
use crate::error::ErrorKind;
use crate::{Result, StoreError};

/// Rounds of the check; PgBouncer shows itself in the first.
const ROUNDS: usize = 3;

async fn backend_pid(client: &tokio_postgres::Client) -> Result<String> {
    let messages = client
        .simple_query("SELECT pg_backend_pid()")
        .await
        .map_err(backend)?;
    messages
        .iter()
        .find_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_owned),
            _ => None,
        })
        .ok_or_else(|| StoreError::internal("pg_backend_pid() returned no row"))
}

/// Fails with [`ErrorKind::Config`] when the pool's connections go through
/// a pooler in transaction mode.
pub(super) async fn refuse_transaction_pooling(pool: &Pool) -> Result<()> {
    let one = pool.get().await.map_err(pool_error)?;
    let two = pool.get().await.map_err(pool_error)?;
    for _ in 0..ROUNDS {
        let first = backend_pid(&one).await?;
        // `two` holds a transaction open, so a pooler cannot give its
        // server connection to `one` meanwhile.
        two.simple_query("BEGIN").await.map_err(backend)?;
        let held = backend_pid(&two).await;
        let again = backend_pid(&one).await;
        two.simple_query("COMMIT").await.map_err(backend)?;
        let (held, again) = (held?, again?);
        if held == first || again != first {
            return Err(StoreError::backend(
                ErrorKind::Config,
                "reached through a connection pooler in transaction mode (PgBouncer \
                 pool_mode = transaction): it moves connections between transactions and \
                 loses the prepared statements Sluice keeps on each. Connect to PostgreSQL \
                 directly or through session pooling (pool_mode = session); see \
                 docs/postgres.md",
            ));
        }
    }
    Ok(())
}
