//! The regulation job's lease, its failure, and the frame of its
//! one-transaction purge step (see `crate::regulations`). What a purge
//! deletes of one subject is written per backend (SQLite keeps tombstones
//! and scrubs pages, PostgreSQL works on arrays and orders its row locks
//! against the profile engine's): a [`PurgeSubject`] handed to [`commit`].

use std::time::Duration;

use chrono::{DateTime, Utc};

use super::notify::write_notifications;
use crate::regulations::{pseudonym, status};
use crate::sql::{Conn, Db, Tx, args};
use crate::{RegulationCommit, Result, SubjectPurge};

/// `now + ttl` in unix milliseconds, saturating.
fn lease_end(now: DateTime<Utc>, ttl: Duration) -> i64 {
    now.timestamp_millis()
        .saturating_add(i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX))
}

/// Takes or renews the job's lease; false while another owner holds it
/// unexpired.
pub(crate) async fn take_lease(
    db: &impl Db,
    owner: &str,
    now: DateTime<Utc>,
    ttl: Duration,
) -> Result<bool> {
    let taken = db
        .execute(
            "UPDATE regulation_engine SET lease_owner = $1, lease_until = $2
             WHERE id = 1 AND (lease_owner IS NULL OR lease_owner = $1 OR lease_until < $3)",
            args![owner, lease_end(now, ttl), now],
        )
        .await?;
    Ok(taken == 1)
}

pub(crate) async fn release_lease(db: &impl Db, owner: &str) -> Result<()> {
    db.execute(
        "UPDATE regulation_engine SET lease_owner = NULL, lease_until = NULL
         WHERE id = 1 AND lease_owner = $1",
        args![owner],
    )
    .await?;
    Ok(())
}

/// Whether `owner` holds the job's lease, locking it until the
/// transaction ends (PostgreSQL; SQLite's one writer needs no lock).
async fn holds_lease(tx: &impl Db, owner: &str) -> Result<bool> {
    let lock = tx.dialect().for_update();
    let sql = format!("SELECT lease_owner FROM regulation_engine WHERE id = 1{lock}");
    let holder: Option<String> = tx.query_one(&sql, args![]).await?.take(0)?;
    Ok(holder.as_deref() == Some(owner))
}

/// Takes every partition of the profile engine whoever holds it; returns
/// whether `owner` held them all unexpired already (see the trait docs).
/// The row locks order it against the engine's commits, which lock the
/// rows of the partitions they name.
pub(crate) async fn seize_profile_lease(
    conn: &mut impl Conn,
    owner: &str,
    now: DateTime<Utc>,
    ttl: Duration,
) -> Result<bool> {
    let tx = conn.begin().await?;
    let lock = tx.dialect().for_update();
    let sql = format!("SELECT lease_owner, lease_until FROM profile_engine ORDER BY id{lock}");
    let rows = tx.query(&sql, args![]).await?;
    let mut held = !rows.is_empty();
    for mut row in rows {
        let holder: Option<String> = row.take(0)?;
        let until: Option<i64> = row.get(1)?;
        held &=
            holder.as_deref() == Some(owner) && until.is_some_and(|u| u >= now.timestamp_millis());
    }
    tx.execute(
        "UPDATE profile_engine SET lease_owner = $1, lease_until = $2",
        args![owner, lease_end(now, ttl)],
    )
    .await?;
    tx.commit().await?;
    Ok(held)
}

/// Marks the regulation `FAILED` (see the trait docs).
pub(crate) async fn fail(
    conn: &mut impl Conn,
    owner: &str,
    id: &str,
    error: &str,
    now: DateTime<Utc>,
) -> Result<bool> {
    let tx = conn.begin().await?;
    if !holds_lease(&tx, owner).await? {
        return Ok(false);
    }
    let changed = tx
        .execute(
            "UPDATE regulations SET status = $2, error = $3, finished_at = $4
             WHERE id = $1 AND finished_at IS NULL",
            args![id, status::FAILED, error, now],
        )
        .await?;
    tx.commit().await?;
    Ok(changed == 1)
}

/// What a backend deletes of one subject, inside the step's transaction.
#[allow(async_fn_in_trait, reason = "crate-private; callers are concrete")]
pub(crate) trait PurgeSubject {
    /// Deletes the subject's events and profiles; for a source-scoped
    /// regulation (`scope`), only that source's part of the profiles.
    async fn purge(&self, subject: &SubjectPurge, scope: Option<&str>) -> Result<()>;
}

/// One purge step in the caller's transaction `tx`: false (and nothing
/// written) unless `commit.owner` holds the lease. Each subject still
/// pending is purged by `purger`, notified, and marked done under its
/// pseudonym.
pub(crate) async fn commit(
    tx: &impl Db,
    commit: &RegulationCommit,
    purger: &impl PurgeSubject,
) -> Result<bool> {
    if !holds_lease(tx, &commit.owner).await? {
        return Ok(false);
    }
    let id = &commit.regulation_id;
    let mut row = tx
        .query_one(
            "SELECT notify, source_id FROM regulations WHERE id = $1",
            args![id],
        )
        .await?;
    let notify: bool = row.get(0)?;
    let scope: Option<String> = row.take(1)?;
    for subject in &commit.subjects {
        let pending = tx
            .query_opt(
                "SELECT position FROM regulation_subjects
                 WHERE regulation_id = $1 AND subject_id = $2 AND NOT done",
                args![id, &subject.subject_id],
            )
            .await?;
        let Some(pending) = pending else { continue };
        let position: i64 = pending.get(0)?;
        purger.purge(subject, scope.as_deref()).await?;
        let name = pseudonym(&subject.subject_id);
        if notify {
            write_notifications(tx, id, subject, &name, commit.now).await?;
        }
        tx.execute(
            "UPDATE regulation_subjects SET done = true, subject_id = $3,
                    affected_sources = $4, events_purged = $5
             WHERE regulation_id = $1 AND position = $2",
            args![
                id,
                position,
                &name,
                &serde_json::to_string(&subject.affected_sources).unwrap_or_default(),
                subject.event_seqs.len(),
            ],
        )
        .await?;
    }
    let left: i64 = tx
        .query_one(
            "SELECT count(*) FROM regulation_subjects WHERE regulation_id = $1 AND NOT done",
            args![id],
        )
        .await?
        .get(0)?;
    // A step with subjects never finishes the regulation: the job confirms
    // with an empty step once the purge is on disk (see the trait docs).
    let (state, finished) = if left == 0 && commit.subjects.is_empty() {
        (status::FINISHED, Some(commit.now))
    } else {
        (status::RUNNING, None)
    };
    tx.execute(
        "UPDATE regulations SET status = $2, finished_at = $3 WHERE id = $1",
        args![id, state, finished],
    )
    .await?;
    Ok(true)
}
