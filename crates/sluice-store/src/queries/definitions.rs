//! Reads of the Personas definitions whose cost follows what is read, not
//! how many definitions exist (see `crate::profiles::catalog`): pages, keys,
//! ids, and the definitions changed after a version. The change counter
//! and the triggers that stamp it are per backend (`SCHEMA_CHANGES`).

use super::computations::{COLUMNS, computation};
use crate::sql::{Db, Param, args, limit};
use crate::{Computation, ComputationPage, Result};

async fn read(db: &impl Db, sql: &str, params: &[Param<'_>]) -> Result<Vec<Computation>> {
    db.query_map(sql, params, computation).await
}

/// The current change version, then every definition changed after
/// `after`. The version is read first: a change committed between the two
/// reads comes again next time, none is missed. A version not past `after`
/// means nothing changed, and the engine asks every round: the second read
/// is skipped.
pub(crate) async fn changed(db: &impl Db, after: i64) -> Result<(i64, Vec<Computation>)> {
    let version = db
        .query_opt(
            "SELECT version FROM computations_version WHERE id = 1",
            args![],
        )
        .await?
        .map(|r| r.get(0))
        .transpose()?
        .unwrap_or(0);
    if version <= after {
        return Ok((version, Vec::new()));
    }
    let sql = format!(
        "SELECT {COLUMNS} FROM computations WHERE change_version > $1 ORDER BY change_version"
    );
    Ok((version, read(db, &sql, args![after]).await?))
}

/// Live definitions of a class in creation order, after a cursor (an id);
/// a cursor that names no definition gives an empty page.
pub(crate) async fn page(db: &impl Db, p: &ComputationPage) -> Result<Vec<Computation>> {
    match &p.after {
        None => {
            let sql = format!(
                "SELECT {COLUMNS} FROM computations WHERE class = $1 AND deleted_at IS NULL
                 ORDER BY created_at, id LIMIT $2"
            );
            read(db, &sql, args![&p.class, limit(p.limit)]).await
        }
        Some(after) => {
            let sql = format!(
                "SELECT {COLUMNS} FROM computations
                 WHERE class = $1 AND deleted_at IS NULL
                   AND (created_at, id) > (SELECT created_at, id FROM computations WHERE id = $2)
                 ORDER BY created_at, id LIMIT $3"
            );
            read(db, &sql, args![&p.class, after, limit(p.limit)]).await
        }
    }
}

pub(crate) async fn count(db: &impl Db, class: &str) -> Result<u64> {
    db.query_one(
        "SELECT count(*) FROM computations WHERE class = $1 AND deleted_at IS NULL",
        args![class],
    )
    .await?
    .get(0)
}

/// The definitions whose `column` (`key` or `id`) is one of `values`, the
/// live ones only when `live`.
pub(crate) async fn by(
    db: &impl Db,
    column: &str,
    live: bool,
    values: &[String],
) -> Result<Vec<Computation>> {
    let deleted = if live { " AND deleted_at IS NULL" } else { "" };
    let sql = format!(
        "SELECT {COLUMNS} FROM computations
         WHERE {column} IN (SELECT value FROM {}){deleted}",
        db.dialect().list(1)
    );
    read(db, &sql, args![values]).await
}
