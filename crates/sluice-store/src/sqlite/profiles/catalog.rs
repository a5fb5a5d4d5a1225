//! [`DefinitionStore`] for [`SqliteStore`]: definitions by page, key, id
//! and change (see `crate::profiles::catalog`).

use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, params};

use super::super::SqliteStore;
use super::super::rows::sql_limit;
use super::defs::{COLUMNS, finish, row_to_computation};
use crate::{Computation, ComputationPage, DefinitionStore, Result};

/// The change counter, the column it stamps, the triggers that draw from
/// it, and the index of the paged list.
pub(in crate::sqlite) const SCHEMA_CHANGES: &str = "
CREATE TABLE computations_version (
    id      INTEGER PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL
);
INSERT INTO computations_version (id, version) VALUES (1, 0);
ALTER TABLE computations ADD COLUMN change_version INTEGER NOT NULL DEFAULT 0;
CREATE INDEX computations_change_version ON computations (change_version);
CREATE INDEX computations_by_class ON computations (class, created_at, id);
CREATE TRIGGER computations_created AFTER INSERT ON computations BEGIN
    UPDATE computations_version SET version = version + 1 WHERE id = 1;
    UPDATE computations SET change_version = (SELECT version FROM computations_version)
    WHERE id = NEW.id;
END;
CREATE TRIGGER computations_changed
AFTER UPDATE OF definition, destination_ids, revision, deleted_at, updated_at ON computations
BEGIN
    UPDATE computations_version SET version = version + 1 WHERE id = 1;
    UPDATE computations SET change_version = (SELECT version FROM computations_version)
    WHERE id = NEW.id;
END;
";

fn query(conn: &Connection, sql: &str, args: impl rusqlite::Params) -> Result<Vec<Computation>> {
    let rows = conn
        .prepare_cached(sql)?
        .query_map(args, row_to_computation)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    rows.into_iter().map(finish).collect()
}

fn changed(conn: &Connection, after: i64) -> Result<(i64, Vec<Computation>)> {
    // The version first: a change committed between the two reads comes
    // again next time, none is missed.
    let version: i64 = conn
        .prepare_cached("SELECT version FROM computations_version WHERE id = 1")?
        .query_row([], |r| r.get(0))
        .optional()?
        .unwrap_or(0);
    let rows = query(
        conn,
        &format!(
            "SELECT {COLUMNS} FROM computations WHERE change_version > ?1 ORDER BY change_version"
        ),
        params![after],
    )?;
    Ok((version, rows))
}

fn page(conn: &Connection, p: &ComputationPage) -> Result<Vec<Computation>> {
    let limit = sql_limit(p.limit);
    match &p.after {
        None => query(
            conn,
            &format!(
                "SELECT {COLUMNS} FROM computations WHERE class = ?1 AND deleted_at IS NULL
                 ORDER BY created_at, id LIMIT ?2"
            ),
            params![p.class, limit],
        ),
        Some(after) => query(
            conn,
            &format!(
                "SELECT {COLUMNS} FROM computations
                 WHERE class = ?1 AND deleted_at IS NULL
                   AND (created_at, id) > (SELECT created_at, id FROM computations WHERE id = ?2)
                 ORDER BY created_at, id LIMIT ?3"
            ),
            params![p.class, after, limit],
        ),
    }
}

fn by(conn: &Connection, column: &str, live: bool, values: &[String]) -> Result<Vec<Computation>> {
    let deleted = if live { " AND deleted_at IS NULL" } else { "" };
    let sql = format!("SELECT {COLUMNS} FROM computations WHERE {column} = ?1{deleted}");
    let mut out = Vec::new();
    for v in values {
        out.extend(query(conn, &sql, params![v])?);
    }
    Ok(out)
}

#[async_trait]
impl DefinitionStore for SqliteStore {
    async fn computations_changed(&self, after: i64) -> Result<(i64, Vec<Computation>)> {
        self.readers.run(move |c| changed(c, after)).await
    }

    async fn computations_page(&self, p: ComputationPage) -> Result<Vec<Computation>> {
        self.readers.run(move |c| page(c, &p)).await
    }

    async fn count_computations(&self, class: &str) -> Result<u64> {
        let class = class.to_owned();
        self.readers
            .run(move |c| {
                let n: i64 = c
                    .prepare_cached(
                        "SELECT count(*) FROM computations WHERE class = ?1 AND deleted_at IS NULL",
                    )?
                    .query_row(params![class], |r| r.get(0))?;
                Ok(u64::try_from(n).unwrap_or(0))
            })
            .await
    }

    async fn computations_by_key(&self, keys: Vec<String>) -> Result<Vec<Computation>> {
        self.readers.run(move |c| by(c, "key", true, &keys)).await
    }

    async fn computations_by_id(&self, ids: Vec<String>) -> Result<Vec<Computation>> {
        self.readers.run(move |c| by(c, "id", false, &ids)).await
    }
}
