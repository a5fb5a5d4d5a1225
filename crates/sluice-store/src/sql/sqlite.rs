//! The SQL layer's SQLite driver: synchronous `rusqlite` calls behind the
//! [`Db`] interface, with cached prepared statements.
//!
//! Its futures complete on first poll (nothing in them waits), so the
//! writer thread and the read pool run the shared query functions with
//! [`ready`] inside the jobs they already run.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, ToSql, params_from_iter};

use super::value::Value;
use super::{Conn, Db, Dialect, Param, ProfileLinks, Row, Tx};
use crate::{Result, StoreError};

/// A SQLite connection, inside the transaction its job runs in.
pub(crate) struct Lite<'c>(pub(crate) &'c Connection);

/// Runs a future of the SQLite driver to completion. Its statements are
/// synchronous, so it is done after one poll.
pub(crate) fn ready<T>(work: impl Future<Output = Result<T>>) -> Result<T> {
    let mut work = pin!(work);
    match work.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => out,
        Poll::Pending => Err(StoreError::internal(
            "a SQLite statement waited, which it cannot",
        )),
    }
}

fn mapped(e: rusqlite::Error) -> StoreError {
    if crate::sqlite::rows::is_unique_violation(&e) {
        StoreError::Conflict(e.to_string())
    } else {
        e.into()
    }
}

impl ToSql for Param<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        use rusqlite::types::Value as V;
        Ok(match *self {
            Param::Null => ToSqlOutput::Owned(V::Null),
            Param::Int(i) => ToSqlOutput::Owned(V::Integer(i)),
            Param::Real(r) => ToSqlOutput::Owned(V::Real(r)),
            Param::Bool(b) => ToSqlOutput::Owned(V::Integer(i64::from(b))),
            Param::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
            Param::Blob(b) => ToSqlOutput::Borrowed(ValueRef::Blob(b)),
            Param::Texts(list) => ToSqlOutput::Owned(V::Text(json_list(list)?)),
            Param::Ints(list) => ToSqlOutput::Owned(V::Text(json_list(list)?)),
        })
    }
}

fn json_list<T: serde::Serialize>(list: &[T]) -> rusqlite::Result<String> {
    serde_json::to_string(list).map_err(|e| rusqlite::Error::ToSqlConversionFailure(e.into()))
}

fn value(v: ValueRef<'_>) -> Result<Value> {
    Ok(match v {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(i) => Value::Int(i),
        ValueRef::Real(r) => Value::Real(r),
        ValueRef::Text(t) => Value::Text(
            String::from_utf8(t.to_vec())
                .map_err(|e| StoreError::corrupt(format!("stored text: {e}")))?,
        ),
        ValueRef::Blob(b) => Value::Blob(b.to_vec()),
    })
}

impl Db for Lite<'_> {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    async fn execute(&self, sql: &str, params: &[Param<'_>]) -> Result<u64> {
        let sql = Dialect::Sqlite.render(sql);
        let mut stmt = self.0.prepare_cached(&sql)?;
        let changed = stmt.execute(params_from_iter(params)).map_err(mapped)?;
        Ok(u64::try_from(changed).unwrap_or(u64::MAX))
    }

    async fn query(&self, sql: &str, params: &[Param<'_>]) -> Result<Vec<Row>> {
        let sql = Dialect::Sqlite.render(sql);
        let mut stmt = self.0.prepare_cached(&sql)?;
        let width = stmt.column_count();
        let mut rows = stmt.query(params_from_iter(params)).map_err(mapped)?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(mapped)? {
            let mut values = Vec::with_capacity(width);
            for idx in 0..width {
                values.push(value(row.get_ref(idx)?)?);
            }
            out.push(Row(values));
        }
        Ok(out)
    }
}

impl Conn for Lite<'_> {
    type Tx<'t>
        = Lite<'t>
    where
        Self: 't;

    /// The job's own transaction (see the module notes of `crate::sql`).
    async fn begin(&mut self) -> Result<Lite<'_>> {
        Ok(Lite(self.0))
    }

    async fn snapshot(&mut self) -> Result<Lite<'_>> {
        Ok(Lite(self.0))
    }
}

impl Tx for Lite<'_> {
    /// Nothing to do: the job's transaction commits with its group.
    async fn commit(self) -> Result<()> {
        Ok(())
    }
}

impl ProfileLinks for Lite<'_> {
    async fn cancel_computation(&self, computation: &str) -> Result<()> {
        crate::sqlite::profiles::scheduled::cancel_computation(self.0, computation)
    }
}
