//! [`DefinitionStore`] for [`SqliteStore`]: definitions by page, key, id
//! and change (see `crate::profiles::catalog`).

use async_trait::async_trait;

use super::super::SqliteStore;
use crate::queries::definitions as q;
use crate::sql::sqlite::{Lite, ready};
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

#[async_trait]
impl DefinitionStore for SqliteStore {
    async fn computations_changed(&self, after: i64) -> Result<(i64, Vec<Computation>)> {
        self.readers
            .run(move |c| ready(q::changed(&Lite(c), after)))
            .await
    }

    async fn computations_page(&self, p: ComputationPage) -> Result<Vec<Computation>> {
        self.readers
            .run(move |c| ready(q::page(&Lite(c), &p)))
            .await
    }

    async fn count_computations(&self, class: &str) -> Result<u64> {
        let class = class.to_owned();
        self.readers
            .run(move |c| ready(q::count(&Lite(c), &class)))
            .await
    }

    async fn computations_by_key(&self, keys: Vec<String>) -> Result<Vec<Computation>> {
        self.readers
            .run(move |c| ready(q::by(&Lite(c), "key", true, &keys)))
            .await
    }

    async fn computations_by_id(&self, ids: Vec<String>) -> Result<Vec<Computation>> {
        self.readers
            .run(move |c| ready(q::by(&Lite(c), "id", false, &ids)))
            .await
    }
}
