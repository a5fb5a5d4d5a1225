//! Conversions between SQLite values and store records.
//!
//! Times are stored as integer unix milliseconds (UTC): compact, ordered, and
//! identical in every backend. Records handed back are therefore truncated to
//! millisecond precision.

use chrono::{DateTime, Utc};
use rusqlite::types::Type;
use rusqlite::{Row, ffi};

use crate::error::ErrorKind;
use crate::{StoreError, StoredEvent};

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        let kind = kind_of(&e);
        StoreError::caused(kind, e.to_string(), e)
    }
}

/// How a SQLite failure should be treated, by its result code.
fn kind_of(e: &rusqlite::Error) -> ErrorKind {
    use rusqlite::ErrorCode as C;
    match e {
        rusqlite::Error::SqliteFailure(err, _) => match err.code {
            C::DatabaseBusy | C::DatabaseLocked => ErrorKind::Timeout,
            C::DiskFull | C::SystemIoFailure | C::CannotOpen | C::OutOfMemory => {
                ErrorKind::Unavailable
            }
            C::DatabaseCorrupt | C::NotADatabase => ErrorKind::Corrupt,
            C::SchemaChanged => ErrorKind::Schema,
            _ => ErrorKind::Internal,
        },
        rusqlite::Error::FromSqlConversionFailure(..)
        | rusqlite::Error::IntegralValueOutOfRange(..)
        | rusqlite::Error::InvalidColumnType(..)
        | rusqlite::Error::Utf8Error(..) => ErrorKind::Corrupt,
        _ => ErrorKind::Internal,
    }
}

/// Whether `e` is a UNIQUE or PRIMARY KEY violation, which callers report as
/// [`StoreError::Conflict`].
pub(crate) fn is_unique_violation(e: &rusqlite::Error) -> bool {
    e.sqlite_error().is_some_and(|err| {
        err.extended_code == ffi::SQLITE_CONSTRAINT_UNIQUE
            || err.extended_code == ffi::SQLITE_CONSTRAINT_PRIMARYKEY
    })
}

/// Unix milliseconds of `t`.
pub(super) fn ms(t: DateTime<Utc>) -> i64 {
    t.timestamp_millis()
}

fn to_time(idx: usize, millis: i64) -> rusqlite::Result<DateTime<Utc>> {
    DateTime::from_timestamp_millis(millis).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            idx,
            Type::Integer,
            format!("timestamp {millis} ms out of range").into(),
        )
    })
}

/// Reads a non-null millisecond column as a time.
pub(super) fn time(row: &Row<'_>, idx: usize) -> rusqlite::Result<DateTime<Utc>> {
    to_time(idx, row.get(idx)?)
}

/// Reads a nullable millisecond column as an optional time.
pub(super) fn opt_time(row: &Row<'_>, idx: usize) -> rusqlite::Result<Option<DateTime<Utc>>> {
    row.get::<_, Option<i64>>(idx)?
        .map(|m| to_time(idx, m))
        .transpose()
}

/// Reads a small non-negative integer (attempt numbers).
pub(super) fn small(row: &Row<'_>, idx: usize) -> rusqlite::Result<u32> {
    let v: i64 = row.get(idx)?;
    u32::try_from(v)
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(idx, Type::Integer, e.into()))
}

pub(super) use crate::records::utc_day as day;

/// Converts a caller's limit to SQL: `0` means no limit (`-1` in SQLite).
pub(super) fn sql_limit(limit: u32) -> i64 {
    if limit == 0 { -1 } else { i64::from(limit) }
}

/// The columns [`stored_event`] reads, in its order.
pub(super) const EVENT_COLUMNS: &str =
    "seq, source_id, message_id, event_type, received_at, body, blocked";

/// An `events` row selected as [`EVENT_COLUMNS`].
pub(super) fn stored_event(row: &Row<'_>) -> rusqlite::Result<StoredEvent> {
    Ok(StoredEvent {
        seq: row.get(0)?,
        source_id: row.get(1)?,
        message_id: row.get(2)?,
        event_type: row.get(3)?,
        received_at: time(row, 4)?,
        body: super::bodies::read(row, 5)?,
        blocked: row.get(6)?,
    })
}
