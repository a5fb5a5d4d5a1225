//! One SQL layer for both backends.
//!
//! The store's query logic (what to read and write, in which order, under
//! which locks) is written once, in `crate::queries`, as `async` functions
//! generic over [`Db`]. What differs between SQLite and PostgreSQL lives
//! here and nowhere else:
//! - [`dialect`]: placeholders (`$1` → `?1`), lists (`json_each` vs
//!   `UNNEST`), `max`/`GREATEST`, row locks that only PostgreSQL needs.
//! - [`value`]: parameters in and rows out, in the few types both store.
//! - `sqlite`: the synchronous driver. Its futures never wait, so the
//!   writer thread and the read pool run them to completion in place
//!   ([`sqlite::ready`]); group commit and the read pool stay as they are.
//! - `postgres`: the asynchronous driver on a pooled connection, with
//!   cached prepared statements.
//!
//! # Transactions
//! [`Conn::begin`] opens a read-write transaction and [`Conn::snapshot`] a
//! read-only one that sees one snapshot across statements. On PostgreSQL
//! they are real transactions (READ COMMITTED, and REPEATABLE READ for a
//! snapshot) that roll back unless committed. On SQLite every write job
//! already runs inside the writer's group transaction (rolled back as a
//! whole if the job fails) and every read inside a read transaction, so
//! both are the connection itself and `commit` does nothing.
//!
//! Statements that truly differ (the ingest writer's multi-row inserts, the
//! delivery claim, SQLite's compressed bodies) stay in the backend modules.

pub(crate) mod dialect;
#[cfg(feature = "postgres")]
pub(crate) mod postgres;
#[cfg(feature = "sqlite")]
pub(crate) mod sqlite;
pub(crate) mod value;

pub(crate) use dialect::Dialect;
pub(crate) use value::{Param, Row, args, limit};

use crate::{Result, StoreError};

/// A connection or transaction that runs statements.
#[allow(async_fn_in_trait, reason = "crate-private; callers are concrete")]
pub(crate) trait Db {
    /// The SQL dialect statements are written for.
    fn dialect(&self) -> Dialect;

    /// Runs a statement, returning the number of rows it changed. A
    /// uniqueness violation is [`StoreError::Conflict`].
    async fn execute(&self, sql: &str, params: &[Param<'_>]) -> Result<u64>;

    /// Runs a query, returning every row.
    async fn query(&self, sql: &str, params: &[Param<'_>]) -> Result<Vec<Row>>;

    /// The first row of a query, if any.
    async fn query_opt(&self, sql: &str, params: &[Param<'_>]) -> Result<Option<Row>> {
        Ok(self.query(sql, params).await?.into_iter().next())
    }

    /// The first row of a query that always returns one.
    async fn query_one(&self, sql: &str, params: &[Param<'_>]) -> Result<Row> {
        self.query_opt(sql, params)
            .await?
            .ok_or_else(|| StoreError::internal("a query that returns a row returned none"))
    }

    /// Whether a query returns any row.
    async fn exists(&self, sql: &str, params: &[Param<'_>]) -> Result<bool> {
        Ok(self.query_opt(sql, params).await?.is_some())
    }

    /// Every row of a query mapped by `map`.
    async fn query_map<T>(
        &self,
        sql: &str,
        params: &[Param<'_>],
        map: impl FnMut(Row) -> Result<T>,
    ) -> Result<Vec<T>> {
        self.query(sql, params)
            .await?
            .into_iter()
            .map(map)
            .collect()
    }
}

/// A connection that opens transactions.
#[allow(async_fn_in_trait, reason = "crate-private; callers are concrete")]
pub(crate) trait Conn: Db {
    /// The transaction type, borrowing the connection.
    type Tx<'t>: Tx + ProfileLinks
    where
        Self: 't;

    /// A read-write transaction.
    async fn begin(&mut self) -> Result<Self::Tx<'_>>;

    /// A read-only transaction whose statements all see one snapshot.
    async fn snapshot(&mut self) -> Result<Self::Tx<'_>>;
}

/// An open transaction: rolled back when dropped uncommitted.
#[allow(async_fn_in_trait, reason = "crate-private; callers are concrete")]
pub(crate) trait Tx: Db {
    /// Commits the transaction.
    async fn commit(self) -> Result<()>;
}

/// Replaces a [`StoreError::Conflict`]'s text with `what` (say which record
/// exists), for `map_err`.
pub(crate) fn conflict(what: impl Into<String>) -> impl FnOnce(StoreError) -> StoreError {
    move |e| match e {
        StoreError::Conflict(_) => StoreError::Conflict(what.into()),
        other => other,
    }
}

/// The step of the profile engine's storage that a shared query takes
/// inside its transaction. The engine's step and its prepared window
/// changes are written per backend (SQLite keeps tombstones and runs one
/// change at a time on its writer; PostgreSQL works in batches under row
/// locks), so a definition change reaches them through this seam.
#[allow(async_fn_in_trait, reason = "crate-private; callers are concrete")]
pub(crate) trait ProfileLinks {
    /// Drops a computation's prepared window changes with their untaken
    /// messages; each profile is due again at the change's time.
    async fn cancel_computation(&self, computation: &str) -> Result<()>;
}
