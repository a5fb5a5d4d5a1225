//! [`RegulationStore`] for [`SqliteStore`]: requests, suppressions and the
//! delete notifications, the job's lease and the frame of its purge step
//! are `crate::queries::regulations`; the scan and what a purge deletes are
//! `purge.rs`.
//!
//! The writer runs with `secure_delete = ON` (see `schema.rs`), so every
//! update and delete zeroes the space it frees: neither a purged row nor a
//! stale copy left by an earlier update lingers in free space or on the
//! freelist. After each purge commit a
//! `TRUNCATE` checkpoint copies the zeroed pages into the database file and
//! empties the WAL, whose older frames still held the purged rows.

mod purge;

pub(super) use purge::truncate_wal;

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::SqliteStore;
use crate::queries::regulations::{self, purge as job};
use crate::sql::sqlite::{Lite, ready};
use crate::{
    NewRegulation, Regulation, RegulationCommit, RegulationDetail, RegulationStore, Result,
    SubjectData, SuppressedCount, SuppressionChange,
};

/// Version 4: regulations and suppressions (see `crate::regulations`).
pub(super) const SCHEMA: &str = "
CREATE TABLE regulations (
    id              TEXT PRIMARY KEY,
    regulation_type TEXT NOT NULL,
    source_id       TEXT,
    status          TEXT NOT NULL,
    purge           INTEGER NOT NULL,
    notify          INTEGER NOT NULL,
    created_at      INTEGER NOT NULL,
    finished_at     INTEGER
);
CREATE INDEX regulations_open ON regulations (created_at) WHERE finished_at IS NULL;
CREATE TABLE regulation_subjects (
    regulation_id    TEXT NOT NULL,
    position         INTEGER NOT NULL,
    subject_id       TEXT NOT NULL,
    done             INTEGER NOT NULL DEFAULT 0,
    affected_sources TEXT NOT NULL DEFAULT '[]',
    events_purged    INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (regulation_id, position)
) WITHOUT ROWID;
CREATE INDEX regulation_subjects_subject ON regulation_subjects (regulation_id, subject_id);
CREATE TABLE regulation_notifications (
    regulation_id  TEXT NOT NULL,
    subject_id     TEXT NOT NULL,
    source_id      TEXT NOT NULL,
    destination_id TEXT NOT NULL,
    delivery_id    INTEGER NOT NULL,
    PRIMARY KEY (regulation_id, delivery_id)
) WITHOUT ROWID;
CREATE TABLE suppressions (
    user_id TEXT PRIMARY KEY,
    active  INTEGER NOT NULL,
    version INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX suppressions_version ON suppressions (version);
CREATE TABLE usage_suppressed (
    source_id TEXT NOT NULL,
    day       TEXT NOT NULL,
    events    INTEGER NOT NULL,
    PRIMARY KEY (source_id, day)
) WITHOUT ROWID;
CREATE TABLE regulation_engine (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    lease_owner TEXT,
    lease_until INTEGER
);
INSERT INTO regulation_engine (id) VALUES (1);
";

/// Version 5: why a regulation failed.
pub(super) const SCHEMA_V5: &str = "ALTER TABLE regulations ADD COLUMN error TEXT;";

/// The affected sources a notification stands for, a JSON
/// array (one notification per subject and destination); `NULL` in rows
/// written before, which stood for their `source_id` alone.
pub(super) const NOTIFICATION_SOURCES: &str =
    "ALTER TABLE regulation_notifications ADD COLUMN source_ids TEXT;";

#[async_trait]
impl RegulationStore for SqliteStore {
    async fn create_regulation(&self, new: NewRegulation) -> Result<Regulation> {
        let weight = new.subject_ids.len();
        self.writer
            .run(weight, move |c| {
                ready(regulations::create(&mut Lite(c), &new))
            })
            .await
    }

    async fn list_regulations(&self, limit: u32, before: Option<&str>) -> Result<Vec<Regulation>> {
        let before = before.map(str::to_owned);
        self.readers
            .run(move |c| ready(regulations::list(&Lite(c), limit, before.as_deref())))
            .await
    }

    async fn get_regulation(&self, id: &str) -> Result<Option<RegulationDetail>> {
        let id = id.to_owned();
        self.readers
            .run(move |c| ready(regulations::detail(&Lite(c), &id)))
            .await
    }

    async fn list_suppressions(&self, after: &str, limit: u32) -> Result<Vec<String>> {
        let after = after.to_owned();
        self.readers
            .run(move |c| ready(regulations::suppressions(&Lite(c), &after, limit)))
            .await
    }

    async fn suppression_changes(
        &self,
        version: i64,
        limit: u32,
    ) -> Result<Vec<SuppressionChange>> {
        self.readers
            .run(move |c| ready(regulations::changes(&Lite(c), version, limit)))
            .await
    }

    async fn add_suppressed(&self, counts: Vec<SuppressedCount>) -> Result<()> {
        self.writer
            .run(1, move |c| {
                ready(regulations::add_suppressed(&Lite(c), &counts))
            })
            .await
    }

    async fn suppressed_usage(
        &self,
        source_id: &str,
        from: &str,
        to: &str,
    ) -> Result<Vec<SuppressedCount>> {
        let (s, f, t) = (source_id.to_owned(), from.to_owned(), to.to_owned());
        self.readers
            .run(move |c| ready(regulations::suppressed_usage(&Lite(c), &s, &f, &t)))
            .await
    }

    async fn take_regulation_lease(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        ttl: Duration,
    ) -> Result<bool> {
        let owner = owner.to_owned();
        self.writer
            .run(1, move |c| {
                ready(job::take_lease(&Lite(c), &owner, now, ttl))
            })
            .await
    }

    async fn release_regulation_lease(&self, owner: &str) -> Result<()> {
        let owner = owner.to_owned();
        self.writer
            .run(1, move |c| ready(job::release_lease(&Lite(c), &owner)))
            .await
    }

    async fn next_regulation(&self, limit: u32) -> Result<Option<(Regulation, Vec<String>)>> {
        self.readers
            .run(move |c| ready(regulations::next(&Lite(c), limit)))
            .await
    }

    async fn find_subject_data(
        &self,
        user_ids: Vec<String>,
        source_id: Option<String>,
    ) -> Result<Vec<SubjectData>> {
        self.readers
            .run(move |c| purge::find(c, &user_ids, source_id.as_deref()))
            .await
    }

    async fn commit_regulation(&self, commit: RegulationCommit) -> Result<bool> {
        let weight = commit.subjects.iter().map(|s| s.event_seqs.len()).sum();
        let purged = !commit.subjects.is_empty();
        if !purged {
            // The step that finishes the regulation: first no byte of its
            // subjects may be left in free space (`scrub`).
            self.scrub_free_space().await?;
        }
        let committed = self
            .writer
            .run(weight, move |c| purge::commit(c, &commit))
            .await?;
        if committed && purged {
            let path = self.path.clone();
            tokio::task::spawn_blocking(move || purge::truncate_wal(&path))
                .await
                .map_err(|e| crate::StoreError::internal(format!("checkpoint task: {e}")))??;
        }
        Ok(committed)
    }

    async fn fail_regulation(
        &self,
        owner: &str,
        id: &str,
        error: &str,
        now: DateTime<Utc>,
    ) -> Result<bool> {
        let (owner, id, error) = (owner.to_owned(), id.to_owned(), error.to_owned());
        self.writer
            .run(1, move |c| {
                ready(job::fail(&mut Lite(c), &owner, &id, &error, now))
            })
            .await
    }

    async fn seize_profile_lease(
        &self,
        owner: &str,
        now: DateTime<Utc>,
        ttl: Duration,
    ) -> Result<bool> {
        let owner = owner.to_owned();
        self.writer
            .run(1, move |c| {
                ready(job::seize_profile_lease(&mut Lite(c), &owner, now, ttl))
            })
            .await
    }
}
