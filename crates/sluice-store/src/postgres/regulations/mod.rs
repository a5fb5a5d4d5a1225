//! [`RegulationStore`] for [`PostgresStore`]: requests, suppressions and
//! the delete notifications, the job's lease and the frame of its purge
//! step are `crate::queries::regulations` (suppression versions are
//! assigned there under a transaction-scoped advisory lock, so they commit
//! in order and pollers never skip one); the scan and what a purge deletes
//! are `purge.rs`.

mod purge;

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::PostgresStore;
use crate::queries::regulations::{self, purge as job};
use crate::{
    NewRegulation, Regulation, RegulationCommit, RegulationDetail, RegulationStore, Result,
    SubjectData, SuppressedCount, SuppressionChange,
};

/// Version 4: regulations and suppressions (see `crate::regulations`).
pub(super) const SCHEMA: &str = r#"
CREATE TABLE regulations (
    id              text COLLATE "C" PRIMARY KEY,
    regulation_type text NOT NULL,
    source_id       text COLLATE "C",
    status          text NOT NULL,
    purge           boolean NOT NULL,
    notify          boolean NOT NULL,
    created_at      bigint NOT NULL,
    finished_at     bigint
);
CREATE INDEX regulations_open ON regulations (created_at) WHERE finished_at IS NULL;
CREATE TABLE regulation_subjects (
    regulation_id    text COLLATE "C" NOT NULL,
    position         bigint NOT NULL,
    subject_id       text COLLATE "C" NOT NULL,
    done             boolean NOT NULL DEFAULT false,
    affected_sources text NOT NULL DEFAULT '[]',
    events_purged    bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (regulation_id, position)
);
CREATE INDEX regulation_subjects_subject ON regulation_subjects (regulation_id, subject_id);
CREATE TABLE regulation_notifications (
    regulation_id  text COLLATE "C" NOT NULL,
    subject_id     text COLLATE "C" NOT NULL,
    source_id      text COLLATE "C" NOT NULL,
    destination_id text COLLATE "C" NOT NULL,
    delivery_id    bigint NOT NULL,
    PRIMARY KEY (regulation_id, delivery_id)
);
CREATE TABLE suppressions (
    user_id text COLLATE "C" PRIMARY KEY,
    active  boolean NOT NULL,
    version bigint NOT NULL
);
CREATE INDEX suppressions_version ON suppressions (version);
CREATE TABLE usage_suppressed (
    source_id text COLLATE "C" NOT NULL,
    day       text COLLATE "C" NOT NULL,
    events    bigint NOT NULL,
    PRIMARY KEY (source_id, day)
);
CREATE TABLE regulation_engine (
    id          integer PRIMARY KEY CHECK (id = 1),
    lease_owner text,
    lease_until bigint
);
INSERT INTO regulation_engine (id) VALUES (1);
"#;

/// Version 5: why a regulation failed.
pub(super) const SCHEMA_V5: &str = "ALTER TABLE regulations ADD COLUMN error text;";

/// The affected sources a notification stands for, a JSON
/// array (one notification per subject and destination); `NULL` in rows
/// written before, which stood for their `source_id` alone.
pub(super) const NOTIFICATION_SOURCES: &str =
    "ALTER TABLE regulation_notifications ADD COLUMN source_ids text;";

#[async_trait]
impl RegulationStore for PostgresStore {
    async fn create_regulation(&self, new: NewRegulation) -> Result<Regulation> {
        regulations::create(&mut self.db().await?, &new).await
    }

    async fn list_regulations(&self, limit: u32, before: Option<&str>) -> Result<Vec<Regulation>> {
        regulations::list(&self.db().await?, limit, before).await
    }

    async fn get_regulation(&self, id: &str) -> Result<Option<RegulationDetail>> {
        regulations::detail(&self.db().await?, id).await
    }

    async fn list_suppressions(&self, after: &str, limit: u32) -> Result<Vec<String>> {
        regulations::suppressions(&self.db().await?, after, limit).await
    }

    async fn suppression_changes(
        &self,
        version: i64,
        limit: u32,
    ) -> Result<Vec<SuppressionChange>> {
        regulations::changes(&self.db().await?, version, limit).await
    }

    async fn add_suppressed(&self, counts: Vec<SuppressedCount>) -> Result<()> {
        regulations::add_suppressed(&self.db().await?, &counts).await
    }

    async fn suppressed_usage(
        &self,
        source_id: &str,
        from: &str,
        to: &str,
    ) -> Result<Vec<SuppressedCount>> {
        regulations::suppressed_usage(&self.db().await?, source_id, from, to).await
    }

    async fn take_regulation_lease(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        ttl: Duration,
    ) -> Result<bool> {
        job::take_lease(&self.db().await?, owner, now, ttl).await
    }

    async fn release_regulation_lease(&self, owner: &str) -> Result<()> {
        job::release_lease(&self.db().await?, owner).await
    }

    async fn next_regulation(&self, limit: u32) -> Result<Option<(Regulation, Vec<String>)>> {
        regulations::next(&self.db().await?, limit).await
    }

    async fn find_subject_data(
        &self,
        user_ids: Vec<String>,
        source_id: Option<String>,
    ) -> Result<Vec<SubjectData>> {
        purge::find(&self.client().await?, &user_ids, source_id.as_deref()).await
    }

    async fn commit_regulation(&self, commit: RegulationCommit) -> Result<bool> {
        purge::commit(&mut self.client().await?, &commit).await
    }

    async fn fail_regulation(
        &self,
        owner: &str,
        id: &str,
        error: &str,
        now: DateTime<Utc>,
    ) -> Result<bool> {
        job::fail(&mut self.db().await?, owner, id, error, now).await
    }

    async fn seize_profile_lease(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        ttl: Duration,
    ) -> Result<bool> {
        job::seize_profile_lease(&mut self.db().await?, owner, now, ttl).await
    }
}
