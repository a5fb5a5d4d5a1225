//! The profile engine's statements that both backends run alike: the
//! definition job queue, the walk over profile ids, a step's bookkeeping
//! (job progress, computed stamps) and removing profiles with what hangs
//! off them.
//!
//! The step's reads of identities, profiles and values, its window changes
//! and its outbox stay per backend: SQLite runs them one row at a time on
//! its single writer, PostgreSQL as array statements under row locks, and
//! their plans are what keeps a step's cost flat as the tables grow (see
//! `postgres/profiles/engine.rs`).

use crate::sql::{Db, Row, args, limit};
use crate::{ComputedValue, JobProgress, ProfileCommit, ProfileJob, Result};

/// The stored values of `ids`' profiles.
pub(crate) async fn values_of(db: &impl Db, ids: &[String]) -> Result<Vec<ComputedValue>> {
    db.query_map(
        &format!(
            "SELECT computation_id, profile_id, value FROM computed_values WHERE {}",
            db.dialect().any("profile_id", 1)
        ),
        args![ids],
        super::computations::computed_value,
    )
    .await
}

/// Moves the behavioural rows of merged-away profiles to the profile each
/// merged into (`(from, into)` pairs), before the step removes them.
pub(crate) async fn move_events(db: &impl Db, moved: &[(String, String)]) -> Result<()> {
    for (from, into) in moved {
        db.execute(
            "UPDATE profile_events SET profile_id = $2 WHERE profile_id = $1",
            args![from, into],
        )
        .await?;
    }
    Ok(())
}

/// Profile ids after `after`, in id order: a job's walk over every profile.
pub(crate) async fn ids_after(db: &impl Db, after: &str, n: u32) -> Result<Vec<String>> {
    db.query_map(
        "SELECT id FROM profiles WHERE id > $1 ORDER BY id LIMIT $2",
        args![after, limit(n)],
        |r| r.get(0),
    )
    .await
}

/// The oldest queued definition job (a recompute or a destination's first
/// sync), if any.
pub(crate) async fn next_job(db: &impl Db) -> Result<Option<ProfileJob>> {
    let row = db
        .query_opt(
            "SELECT id, computation_id, kind, destination_id, after_profile FROM profile_jobs
             ORDER BY id LIMIT 1",
            &[],
        )
        .await?;
    row.map(job).transpose()
}

fn job(mut r: Row) -> Result<ProfileJob> {
    Ok(ProfileJob {
        id: r.get(0)?,
        computation_id: r.take(1)?,
        kind: r.take(2)?,
        destination_id: r.take(3)?,
        after_profile: r.take(4)?,
    })
}

/// A step's bookkeeping, in its transaction: the computations it evaluated
/// in full are stamped, and its job moves on or is done.
pub(crate) async fn record(db: &impl Db, c: &ProfileCommit) -> Result<()> {
    if !c.computed.is_empty() {
        db.execute(
            &format!(
                "UPDATE computations SET last_computed_at = $2 WHERE {}",
                db.dialect().any("id", 1)
            ),
            args![&c.computed, c.now],
        )
        .await?;
    }
    match &c.job {
        Some((id, JobProgress::At(after))) => {
            db.execute(
                "UPDATE profile_jobs SET after_profile = $2 WHERE id = $1",
                args![*id, after],
            )
            .await?;
        }
        Some((id, JobProgress::Done)) => {
            db.execute("DELETE FROM profile_jobs WHERE id = $1", args![*id])
                .await?;
        }
        None => {}
    }
    Ok(())
}

/// What goes with removed profiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Removal {
    /// Merged into another profile, which the step re-points their
    /// identities to.
    Merged,
    /// Purged: their identities go too.
    Purged,
}

/// Deletes `ids`' profiles, computed values and behavioural rows, and with
/// [`Removal::Purged`] their identities. Their window changes are each
/// backend's own and are removed first, by the caller.
pub(crate) async fn remove_profiles(db: &impl Db, ids: &[String], removal: Removal) -> Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let d = db.dialect();
    let mut tables = vec![
        ("computed_values", "profile_id"),
        ("profiles", "id"),
        ("profile_events", "profile_id"),
    ];
    if removal == Removal::Purged {
        tables.insert(0, ("profile_identities", "profile_id"));
    }
    for (table, column) in tables {
        db.execute(
            &format!("DELETE FROM {table} WHERE {}", d.any(column, 1)),
            args![ids],
        )
        .await?;
    }
    Ok(())
}

/// Takes `source`'s behavioural rows out of `ids`' profiles and makes each
/// due at `now` (unless it is due sooner), so the engine's next sweep
/// re-evaluates it from what is left. The source's name in the profile
/// document is each backend's JSON.
pub(crate) async fn forget_source(
    db: &impl Db,
    ids: &[String],
    source: &str,
    now: i64,
) -> Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let any = db.dialect().any("profile_id", 1);
    db.execute(
        &format!(
            "UPDATE profiles SET next_change_at = $2
             WHERE {} AND (next_change_at IS NULL OR next_change_at > $2)",
            db.dialect().any("id", 1)
        ),
        args![ids, now],
    )
    .await?;
    db.execute(
        &format!("DELETE FROM profile_events WHERE {any} AND source_id = $2"),
        args![ids, source],
    )
    .await?;
    Ok(())
}
