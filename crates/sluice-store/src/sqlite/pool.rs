//! Read-only connections for concurrent reads.
//!
//! WAL lets readers run beside the writer, each on a consistent snapshot.
//! Reads run on tokio's blocking pool; a semaphore caps how many run at once
//! (and so how many connections exist), and idle connections are reused so
//! their prepared statement caches stay warm.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rusqlite::Connection;
use tokio::sync::Semaphore;

use super::schema;
use crate::{Result, StoreError};

pub(super) struct ReadPool {
    path: PathBuf,
    busy_timeout: Duration,
    idle: Mutex<Vec<Connection>>,
    permits: Arc<Semaphore>,
}

impl ReadPool {
    pub(super) fn new(path: PathBuf, busy_timeout: Duration, size: usize) -> ReadPool {
        ReadPool {
            path,
            busy_timeout,
            idle: Mutex::new(Vec::new()),
            permits: Arc::new(Semaphore::new(size.max(1))),
        }
    }

    /// Runs `read` in one read transaction, so multi-statement reads see one
    /// snapshot.
    pub(super) async fn run<T, F>(self: &Arc<Self>, read: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        let permit = Arc::clone(&self.permits)
            .acquire_owned()
            .await
            .map_err(|_| StoreError::Closed)?;
        let pool = Arc::clone(self);
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let conn = pool.checkout()?;
            let out = in_read_transaction(&conn, read);
            pool.idle
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(conn);
            out
        })
        .await
        .map_err(|e| StoreError::internal(format!("read task: {e}")))?
    }

    /// Refuses further reads and closes idle connections.
    pub(super) fn close(&self) {
        self.permits.close();
        self.idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    fn checkout(&self) -> Result<Connection> {
        let reused = self
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        match reused {
            Some(conn) => Ok(conn),
            None => schema::open_reader(&self.path, self.busy_timeout),
        }
    }
}

fn in_read_transaction<T>(
    conn: &Connection,
    read: impl FnOnce(&Connection) -> Result<T>,
) -> Result<T> {
    let tx = conn.unchecked_transaction()?;
    let out = read(&tx)?;
    tx.commit()?;
    Ok(out)
}
