//! [`DefinitionStore`] for [`PostgresStore`]: definitions by page, key, id
//! and change (see `crate::profiles::catalog`).

use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use tokio_postgres::types::ToSql;

use super::super::PostgresStore;
use super::super::rows::{backend, get, sql_limit, unsigned};
use super::defs::{COLUMNS, computation};
use crate::{Computation, ComputationPage, DefinitionStore, Result};

/// The change counter, the column it stamps, the trigger that draws from
/// it, and the index of the paged list. The counter row stays locked by a
/// change until it commits, so versions are drawn in commit order.
pub(in crate::postgres) const SCHEMA_CHANGES: &str = r#"
CREATE TABLE computations_version (
    id      integer PRIMARY KEY CHECK (id = 1),
    version bigint NOT NULL
);
INSERT INTO computations_version (id, version) VALUES (1, 0);
ALTER TABLE computations ADD COLUMN change_version bigint NOT NULL DEFAULT 0;
CREATE INDEX computations_change_version ON computations (change_version);
CREATE INDEX computations_by_class ON computations (class, created_at, id);
CREATE FUNCTION computations_stamp() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE computations_version SET version = version + 1 WHERE id = 1
    RETURNING version INTO NEW.change_version;
    RETURN NEW;
END
$$;
CREATE TRIGGER computations_stamp
BEFORE INSERT OR UPDATE OF definition, destination_ids, revision, deleted_at, updated_at
ON computations FOR EACH ROW EXECUTE FUNCTION computations_stamp();
"#;

async fn query(
    c: &impl GenericClient,
    sql: &str,
    args: &[&(dyn ToSql + Sync)],
) -> Result<Vec<Computation>> {
    let rows = c.query(sql, args).await.map_err(backend)?;
    rows.iter().map(computation).collect()
}

#[async_trait]
impl DefinitionStore for PostgresStore {
    async fn computations_changed(&self, after: i64) -> Result<(i64, Vec<Computation>)> {
        let c = self.client().await?;
        // The version first: a change committed between the two reads comes
        // again next time, none is missed.
        let row = c
            .query_opt("SELECT version FROM computations_version WHERE id = 1", &[])
            .await
            .map_err(backend)?;
        let version: i64 = row.as_ref().map(|r| get(r, 0)).transpose()?.unwrap_or(0);
        let sql = format!(
            "SELECT {COLUMNS} FROM computations WHERE change_version > $1 ORDER BY change_version"
        );
        Ok((version, query(&c, &sql, &[&after]).await?))
    }

    async fn computations_page(&self, p: ComputationPage) -> Result<Vec<Computation>> {
        let c = self.client().await?;
        let limit = sql_limit(p.limit);
        match &p.after {
            None => {
                let sql = format!(
                    "SELECT {COLUMNS} FROM computations WHERE class = $1 AND deleted_at IS NULL
                     ORDER BY created_at, id LIMIT $2"
                );
                query(&c, &sql, &[&p.class, &limit]).await
            }
            Some(after) => {
                let sql = format!(
                    "SELECT {COLUMNS} FROM computations
                     WHERE class = $1 AND deleted_at IS NULL
                       AND (created_at, id) > (SELECT created_at, id FROM computations WHERE id = $2)
                     ORDER BY created_at, id LIMIT $3"
                );
                query(&c, &sql, &[&p.class, after, &limit]).await
            }
        }
    }

    async fn count_computations(&self, class: &str) -> Result<u64> {
        let row = self
            .client()
            .await?
            .query_one(
                "SELECT count(*) FROM computations WHERE class = $1 AND deleted_at IS NULL",
                &[&class],
            )
            .await
            .map_err(backend)?;
        unsigned(&row, 0)
    }

    async fn computations_by_key(&self, keys: Vec<String>) -> Result<Vec<Computation>> {
        let sql = format!(
            "SELECT {COLUMNS} FROM computations WHERE key = ANY($1) AND deleted_at IS NULL"
        );
        query(&self.client().await?, &sql, &[&keys]).await
    }

    async fn computations_by_id(&self, ids: Vec<String>) -> Result<Vec<Computation>> {
        let sql = format!("SELECT {COLUMNS} FROM computations WHERE id = ANY($1)");
        query(&self.client().await?, &sql, &[&ids]).await
    }
}
