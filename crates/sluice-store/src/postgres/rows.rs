//! Conversions between PostgreSQL values and store records, and error mapping.
//!
//! Times are `bigint` unix milliseconds (UTC), as in the SQLite backend: the
//! same truncation everywhere, ordered, and no time-zone conversions. Counters
//! and attempt numbers are `bigint` too, so every Rust integer maps to `i64`.

use chrono::{DateTime, Utc};
use tokio_postgres::Row;

use crate::StoreError;
use crate::error::ErrorKind;

/// A driver error as a [`StoreError::Backend`] of the kind its SQLSTATE
/// (or, without one, the connection's state) says, with the server's message
/// when there is one (the driver's own text is just "db error").
pub(crate) fn backend(e: tokio_postgres::Error) -> StoreError {
    let kind = kind_of(&e);
    let text = match e.as_db_error() {
        Some(db) => format!("postgres {}: {}", db.code().code(), db.message()),
        None => {
            // "error connecting to server" alone hides the cause.
            let mut text = format!("postgres: {e}");
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                text.push_str(&format!(": {s}"));
                source = s.source();
            }
            text
        }
    };
    StoreError::caused(kind, text, e)
}

/// How a PostgreSQL failure should be treated: by SQLSTATE class when the
/// server answered, else as a connection that is gone.
fn kind_of(e: &tokio_postgres::Error) -> ErrorKind {
    let Some(code) = e.code() else {
        return ErrorKind::Unavailable;
    };
    let code = code.code();
    match code {
        // A prepared statement the server does not know: the connection
        // moved between server processes (see `pooler.rs`).
        "26000" => ErrorKind::Config,
        "40001" | "40P01" | "55P03" => ErrorKind::Contention,
        "57014" => ErrorKind::Timeout,
        "XX001" | "XX002" => ErrorKind::Corrupt,
        _ => match code.get(..2) {
            // Connection exceptions, insufficient resources, operator
            // intervention (shutdown, cannot connect now), system errors, and
            // a transaction the server aborted.
            Some("08" | "53" | "57" | "58" | "25") => ErrorKind::Unavailable,
            // Undefined table or column: a schema other than this build's.
            Some("42") => ErrorKind::Schema,
            _ => ErrorKind::Internal,
        },
    }
}

/// A pool error: `Closed` once the store is closed, `Timeout` when no
/// connection came in time, else the connection's failure.
pub(super) fn pool_error(e: deadpool_postgres::PoolError) -> StoreError {
    match e {
        deadpool_postgres::PoolError::Closed => StoreError::Closed,
        deadpool_postgres::PoolError::Backend(e) => backend(e),
        deadpool_postgres::PoolError::Timeout(_) => {
            StoreError::backend(ErrorKind::Timeout, format!("postgres pool: {e}"))
        }
        other => StoreError::backend(ErrorKind::Unavailable, format!("postgres pool: {other}")),
    }
}

/// Unix milliseconds of `t`.
pub(super) fn ms(t: DateTime<Utc>) -> i64 {
    t.timestamp_millis()
}

fn to_time(idx: usize, millis: i64) -> Result<DateTime<Utc>, StoreError> {
    DateTime::from_timestamp_millis(millis).ok_or_else(|| {
        StoreError::corrupt(format!("column {idx}: timestamp {millis} ms out of range"))
    })
}

/// Reads a column, mapping a type mismatch to `Backend`.
pub(super) fn get<'a, T: tokio_postgres::types::FromSql<'a>>(
    row: &'a Row,
    idx: usize,
) -> Result<T, StoreError> {
    row.try_get(idx).map_err(backend)
}

/// Reads a non-null millisecond column as a time.
pub(super) fn time(row: &Row, idx: usize) -> Result<DateTime<Utc>, StoreError> {
    to_time(idx, get(row, idx)?)
}

/// Reads a nullable millisecond column as an optional time.
pub(super) fn opt_time(row: &Row, idx: usize) -> Result<Option<DateTime<Utc>>, StoreError> {
    get::<Option<i64>>(row, idx)?
        .map(|m| to_time(idx, m))
        .transpose()
}

/// Reads a non-negative `bigint` as `u64`, `u32`, ... (counters, attempt numbers).
pub(super) fn unsigned<T: TryFrom<i64>>(row: &Row, idx: usize) -> Result<T, StoreError> {
    let v: i64 = get(row, idx)?;
    T::try_from(v).map_err(|_| StoreError::corrupt(format!("column {idx}: {v} out of range")))
}

pub(super) use crate::records::utc_day as day;

/// A caller's limit as a SQL `LIMIT` value: `0` means no limit, and
/// PostgreSQL reads `LIMIT NULL` as no limit.
pub(super) fn sql_limit(limit: u32) -> Option<i64> {
    (limit > 0).then_some(i64::from(limit))
}

/// A count or size as `bigint`, saturating (it never is near the bound).
pub(super) fn big(n: impl TryInto<i64>) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}
