//! The SQL layer's PostgreSQL driver: a pooled connection or one of its
//! transactions behind the [`Db`] interface, with cached prepared
//! statements.

use bytes::BytesMut;
use deadpool_postgres::{Client, GenericClient, Transaction};
use tokio_postgres::IsolationLevel;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};

use super::value::Value;
use super::{Conn, Db, Dialect, Param, ProfileLinks, Row, Tx};
use crate::postgres::rows::backend;
use crate::{Result, StoreError};

/// A pooled PostgreSQL connection, back to the pool when dropped.
pub(crate) struct Pg(pub(crate) Client);

/// An open PostgreSQL transaction.
pub(crate) struct PgTx<'t>(Transaction<'t>);

/// A client or transaction that code written directly against the driver
/// holds, lent to the shared query functions: `f(&PgRef(&tx), ..)`.
pub(crate) struct PgRef<'a, C: GenericClient>(pub(crate) &'a C);

type BoxError = Box<dyn std::error::Error + Sync + Send>;

impl ToSql for Param<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        match *self {
            Param::Null => Ok(IsNull::Yes),
            // Integer columns are `bigint` except a few `integer` ones
            // (HTTP status, schema version): narrow when the column is.
            Param::Int(i) if *ty == Type::INT4 => i32::try_from(i)?.to_sql_checked(ty, out),
            Param::Int(i) if *ty == Type::INT2 => i16::try_from(i)?.to_sql_checked(ty, out),
            Param::Int(i) => i.to_sql_checked(ty, out),
            Param::Real(r) => r.to_sql_checked(ty, out),
            Param::Bool(b) => b.to_sql_checked(ty, out),
            Param::Text(s) => s.to_sql_checked(ty, out),
            Param::Blob(b) => b.to_sql_checked(ty, out),
            Param::Texts(list) => list.to_sql_checked(ty, out),
            Param::Ints(list) => list.to_sql_checked(ty, out),
        }
    }

    fn accepts(_: &Type) -> bool {
        // Each variant checks the column's type itself, in `to_sql`.
        true
    }

    to_sql_checked!();
}

fn mapped(e: tokio_postgres::Error) -> StoreError {
    if e.code() == Some(&SqlState::UNIQUE_VIOLATION) {
        let text = e.as_db_error().map(|db| db.message().to_owned());
        StoreError::Conflict(text.unwrap_or_else(|| e.to_string()))
    } else {
        backend(e)
    }
}

fn row(row: &tokio_postgres::Row) -> Result<Row> {
    let mut values = Vec::with_capacity(row.len());
    for (idx, column) in row.columns().iter().enumerate() {
        let ty = column.type_();
        let value = match *ty {
            Type::INT8 => row
                .try_get::<_, Option<i64>>(idx)
                .map(|v| v.map(Value::Int)),
            Type::INT4 => row
                .try_get::<_, Option<i32>>(idx)
                .map(|v| v.map(|i| Value::Int(i64::from(i)))),
            Type::INT2 => row
                .try_get::<_, Option<i16>>(idx)
                .map(|v| v.map(|i| Value::Int(i64::from(i)))),
            Type::BOOL => row
                .try_get::<_, Option<bool>>(idx)
                .map(|v| v.map(|b| Value::Int(i64::from(b)))),
            Type::FLOAT8 => row
                .try_get::<_, Option<f64>>(idx)
                .map(|v| v.map(Value::Real)),
            Type::FLOAT4 => row
                .try_get::<_, Option<f32>>(idx)
                .map(|v| v.map(|r| Value::Real(f64::from(r)))),
            Type::BYTEA => row
                .try_get::<_, Option<Vec<u8>>>(idx)
                .map(|v| v.map(Value::Blob)),
            _ => row
                .try_get::<_, Option<String>>(idx)
                .map(|v| v.map(Value::Text)),
        };
        let value = value.map_err(|e| {
            StoreError::caused(
                crate::ErrorKind::Corrupt,
                format!("column {} of type {ty}", column.name()),
                e,
            )
        })?;
        values.push(value.unwrap_or(Value::Null));
    }
    Ok(Row(values))
}

async fn execute(client: &impl GenericClient, sql: &str, params: &[Param<'_>]) -> Result<u64> {
    let stmt = client.prepare_cached(sql).await.map_err(backend)?;
    let params: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as _).collect();
    client.execute(&stmt, &params).await.map_err(mapped)
}

async fn query(client: &impl GenericClient, sql: &str, params: &[Param<'_>]) -> Result<Vec<Row>> {
    let stmt = client.prepare_cached(sql).await.map_err(backend)?;
    let params: Vec<&(dyn ToSql + Sync)> = params.iter().map(|p| p as _).collect();
    let rows = client.query(&stmt, &params).await.map_err(mapped)?;
    rows.iter().map(row).collect()
}

/// `Db` for a wrapper around something that runs statements: the pooled
/// connection, a transaction, or a borrowed client of existing code.
macro_rules! db_over_client {
    ($($head:tt)*) => {
        $($head)* {
            fn dialect(&self) -> Dialect {
                Dialect::Postgres
            }

            async fn execute(&self, sql: &str, params: &[Param<'_>]) -> Result<u64> {
                execute(self.client(), sql, params).await
            }

            async fn query(&self, sql: &str, params: &[Param<'_>]) -> Result<Vec<Row>> {
                query(self.client(), sql, params).await
            }
        }
    };
}

impl Pg {
    fn client(&self) -> &Client {
        &self.0
    }
}

impl<'t> PgTx<'t> {
    fn client(&self) -> &Transaction<'t> {
        &self.0
    }
}

impl<C: GenericClient> PgRef<'_, C> {
    fn client(&self) -> &C {
        self.0
    }
}

db_over_client!(impl Db for Pg);
db_over_client!(impl Db for PgTx<'_>);
db_over_client!(impl<C: GenericClient> Db for PgRef<'_, C>);

impl Conn for Pg {
    type Tx<'t>
        = PgTx<'t>
    where
        Self: 't;

    async fn begin(&mut self) -> Result<PgTx<'_>> {
        self.0.transaction().await.map(PgTx).map_err(backend)
    }

    async fn snapshot(&mut self) -> Result<PgTx<'_>> {
        self.0
            .build_transaction()
            .isolation_level(IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await
            .map(PgTx)
            .map_err(backend)
    }
}

impl Tx for PgTx<'_> {
    async fn commit(self) -> Result<()> {
        self.0.commit().await.map_err(backend)
    }
}

impl ProfileLinks for PgTx<'_> {
    async fn cancel_computation(&self, computation: &str) -> Result<()> {
        crate::postgres::profiles::scheduled::cancel_computation(&self.0, computation).await
    }
}
