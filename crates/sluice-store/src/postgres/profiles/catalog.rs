//! [`DefinitionStore`] for [`PostgresStore`]: definitions by page, key, id
//! and change (see `crate::profiles::catalog`).

use async_trait::async_trait;

use super::super::PostgresStore;
use crate::queries::definitions as q;
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

#[async_trait]
impl DefinitionStore for PostgresStore {
    async fn computations_changed(&self, after: i64) -> Result<(i64, Vec<Computation>)> {
        q::changed(&self.db().await?, after).await
    }

    async fn computations_page(&self, p: ComputationPage) -> Result<Vec<Computation>> {
        q::page(&self.db().await?, &p).await
    }

    async fn count_computations(&self, class: &str) -> Result<u64> {
        q::count(&self.db().await?, class).await
    }

    async fn computations_by_key(&self, keys: Vec<String>) -> Result<Vec<Computation>> {
        q::by(&self.db().await?, "key", true, &keys).await
    }

    async fn computations_by_id(&self, ids: Vec<String>) -> Result<Vec<Computation>> {
        q::by(&self.db().await?, "id", false, &ids).await
    }
}
