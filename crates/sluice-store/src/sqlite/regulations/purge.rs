//! The regulation job: its lease, the scan for a subject's data (on a read
//! connection, so ingest is not held up) and the one-transaction purge.

use std::time::Duration;

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, params};

use super::super::rows::ms;
use super::super::tombstones;
use crate::queries::regulations::notify::write_notifications;
use crate::regulations::{identity_parts, pseudonym, status, subject_index};
use crate::sql::sqlite::{Lite, ready};
use crate::{PRIVACY_SOURCE, RegulationCommit, Result, SubjectData};

pub(super) fn take_lease(
    c: &Connection,
    owner: &str,
    now: DateTime<Utc>,
    ttl: Duration,
) -> Result<bool> {
    let until = ms(now).saturating_add(i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX));
    let taken = c
        .prepare_cached(
            "UPDATE regulation_engine SET lease_owner = ?1, lease_until = ?2
             WHERE id = 1 AND (lease_owner IS NULL OR lease_owner = ?1 OR lease_until < ?3)",
        )?
        .execute(params![owner, until, ms(now)])?;
    Ok(taken == 1)
}

pub(super) fn release_lease(c: &Connection, owner: &str) -> Result<()> {
    c.prepare_cached(
        "UPDATE regulation_engine SET lease_owner = NULL, lease_until = NULL
         WHERE id = 1 AND lease_owner = ?1",
    )?
    .execute([owner])?;
    Ok(())
}

/// Takes the profile engine's lease whoever holds it; returns whether
/// `owner` held it unexpired already (see the trait docs).
pub(super) fn seize_profile_lease(
    c: &Connection,
    owner: &str,
    now: DateTime<Utc>,
    ttl: Duration,
) -> Result<bool> {
    let (holder, until): (Option<String>, Option<i64>) = c
        .prepare_cached("SELECT lease_owner, lease_until FROM profile_engine WHERE id = 1")?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    let new_until = ms(now).saturating_add(i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX));
    c.prepare_cached("UPDATE profile_engine SET lease_owner = ?1, lease_until = ?2 WHERE id = 1")?
        .execute(params![owner, new_until])?;
    Ok(holder.as_deref() == Some(owner) && until.is_some_and(|u| u >= ms(now)))
}

/// Marks the regulation `FAILED` (see the trait docs).
pub(super) fn fail(
    c: &Connection,
    owner: &str,
    id: &str,
    error: &str,
    now: DateTime<Utc>,
) -> Result<bool> {
    let holder: Option<String> = c
        .prepare_cached("SELECT lease_owner FROM regulation_engine WHERE id = 1")?
        .query_row([], |r| r.get(0))?;
    if holder.as_deref() != Some(owner) {
        return Ok(false);
    }
    let changed = c
        .prepare_cached(
            "UPDATE regulations SET status = ?2, error = ?3, finished_at = ?4
             WHERE id = ?1 AND finished_at IS NULL",
        )?
        .execute(params![id, status::FAILED, error, ms(now)])?;
    Ok(changed == 1)
}

/// One pass over the events for every subject (see the trait docs).
pub(super) fn find(
    c: &Connection,
    user_ids: &[String],
    source_id: Option<&str>,
) -> Result<Vec<SubjectData>> {
    let mut found = vec![SubjectData::default(); user_ids.len()];
    let mut identities: Vec<(String, usize)> = Vec::new();
    {
        let mut profile_of =
            c.prepare_cached("SELECT profile_id FROM profile_identities WHERE identity = ?1")?;
        let mut linked =
            c.prepare_cached("SELECT identity FROM profile_identities WHERE profile_id = ?1")?;
        for (i, user_id) in user_ids.iter().enumerate() {
            identities.push((format!("user:{user_id}"), i));
            let profile: Option<String> = profile_of
                .query_row([format!("user:{user_id}")], |r| r.get(0))
                .optional()?;
            if let Some(profile) = profile {
                let rows = linked.query_map([&profile], |r| r.get::<_, String>(0))?;
                for identity in rows {
                    identities.push((identity?, i));
                }
                found[i].profile_ids.push(profile);
            }
        }
    }
    for data in &mut found {
        data.profile_sources = profile_sources(c, &data.profile_ids)?;
    }
    let index = subject_index(&identities);
    let mut stmt = c.prepare_cached(
        "SELECT seq, source_id,
                CAST(json_extract(body_json(body), '$.userId') AS TEXT),
                CAST(json_extract(body_json(body), '$.anonymousId') AS TEXT),
                CAST(json_extract(body_json(body), '$.previousId') AS TEXT)
         FROM events WHERE source_id != ?1 AND (?2 IS NULL OR source_id = ?2)",
    )?;
    let mut rows = stmt.query(params![PRIVACY_SOURCE, source_id])?;
    while let Some(row) = rows.next()? {
        let user: Option<String> = row.get(2)?;
        let anon: Option<String> = row.get(3)?;
        let previous: Option<String> = row.get(4)?;
        let Some(i) = identity_parts(&index, user, anon, previous) else {
            continue;
        };
        found[i].events.push((row.get(0)?, row.get(1)?));
    }
    Ok(found)
}

/// The sources in the profiles' documents and behavioural events, sorted.
fn profile_sources(c: &Connection, profile_ids: &[String]) -> Result<Vec<String>> {
    let mut stmt = c.prepare_cached(
        "SELECT source_id FROM profile_events WHERE profile_id = ?1
         UNION SELECT CAST(j.value AS TEXT) FROM profiles p, json_each(p.doc, '$.sources') j
               WHERE p.id = ?1",
    )?;
    let mut sources = Vec::new();
    for id in profile_ids {
        for source in stmt.query_map([id], |r| r.get::<_, String>(0))? {
            sources.push(source?);
        }
    }
    sources.sort();
    sources.dedup();
    Ok(sources)
}

pub(super) fn commit(c: &Connection, commit: &RegulationCommit) -> Result<bool> {
    let holder: Option<String> = c
        .prepare_cached("SELECT lease_owner FROM regulation_engine WHERE id = 1")?
        .query_row([], |r| r.get(0))?;
    if holder.as_deref() != Some(commit.owner.as_str()) {
        return Ok(false);
    }
    purge_all(c, commit).map(|()| true)
}

fn purge_all(c: &Connection, commit: &RegulationCommit) -> Result<()> {
    let (notify, scoped): (bool, Option<String>) = c
        .prepare_cached("SELECT notify, source_id FROM regulations WHERE id = ?1")?
        .query_row([&commit.regulation_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
    let now = ms(commit.now);
    for subject in &commit.subjects {
        let pending: Option<i64> = c
            .prepare_cached(
                "SELECT position FROM regulation_subjects
                 WHERE regulation_id = ?1 AND subject_id = ?2 AND done = 0",
            )?
            .query_row(params![commit.regulation_id, subject.subject_id], |r| {
                r.get(0)
            })
            .optional()?;
        let Some(position) = pending else { continue };
        purge_events(c, &subject.event_seqs)?;
        match scoped.as_deref() {
            None => purge_profiles(c, &subject.profile_ids)?,
            Some(source) => strip_source(c, &subject.profile_ids, source, now)?,
        }
        let name = pseudonym(&subject.subject_id);
        if notify {
            ready(write_notifications(
                &Lite(c),
                &commit.regulation_id,
                subject,
                &name,
                commit.now,
            ))?;
        }
        c.prepare_cached(
            "UPDATE regulation_subjects SET done = 1, subject_id = ?3, affected_sources = ?4,
                    events_purged = ?5
             WHERE regulation_id = ?1 AND position = ?2",
        )?
        .execute(params![
            commit.regulation_id,
            position,
            name,
            serde_json::to_string(&subject.affected_sources).unwrap_or_default(),
            i64::try_from(subject.event_seqs.len()).unwrap_or(i64::MAX),
        ])?;
    }
    let left: i64 = c
        .prepare_cached(
            "SELECT count(*) FROM regulation_subjects WHERE regulation_id = ?1 AND done = 0",
        )?
        .query_row([&commit.regulation_id], |r| r.get(0))?;
    // A step with subjects never finishes the regulation: the job confirms
    // with an empty step once the purge is on disk (see the trait docs).
    let (state, finished) = if left == 0 && commit.subjects.is_empty() {
        (status::FINISHED, Some(now))
    } else {
        (status::RUNNING, None)
    };
    c.prepare_cached("UPDATE regulations SET status = ?2, finished_at = ?3 WHERE id = ?1")?
        .execute(params![commit.regulation_id, state, finished])?;
    Ok(())
}

/// Deletes events with their deliveries and attempts. The newest event and
/// the newest delivery are left as tombstones: their rowids must never be
/// handed out again (see `tombstones.rs`).
fn purge_events(c: &Connection, seqs: &[i64]) -> Result<()> {
    for &seq in seqs {
        c.prepare_cached(
            "DELETE FROM attempts WHERE delivery_id IN
               (SELECT id FROM deliveries WHERE event_seq = ?1)",
        )?
        .execute([seq])?;
        let deliveries: Vec<i64> = c
            .prepare_cached("SELECT id FROM deliveries WHERE event_seq = ?1")?
            .query_map([seq], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        for id in deliveries {
            tombstones::delete_delivery(c, id)?;
        }
        tombstones::delete_event(c, seq)?;
    }
    Ok(())
}

fn purge_profiles(c: &Connection, ids: &[String]) -> Result<()> {
    for id in ids {
        crate::sqlite::profiles::scheduled::remove_profile(c, id)?;
        c.prepare_cached("DELETE FROM profile_identities WHERE profile_id = ?1")?
            .execute([id])?;
        c.prepare_cached("DELETE FROM computed_values WHERE profile_id = ?1")?
            .execute([id])?;
        c.prepare_cached("DELETE FROM profiles WHERE id = ?1")?
            .execute([id])?;
        crate::sqlite::profiles::events::delete(c, id)?;
    }
    Ok(())
}

/// A source-scoped purge keeps the profiles (they are workspace-wide) but
/// takes the source out of them: its behavioural rows, and its name from
/// the document's `sources`, so a rerun finds nothing of it left. Each
/// profile is made due at `now`, in this transaction (so a crash cannot
/// lose it): the profile engine's next sweep re-evaluates it from the calls
/// left and sends what changed. The purge never calls the engine.
fn strip_source(c: &Connection, ids: &[String], source: &str, now: i64) -> Result<()> {
    for id in ids {
        crate::sqlite::profiles::scheduled::due_again(c, id, now)?;
        c.prepare_cached("DELETE FROM profile_events WHERE profile_id = ?1 AND source_id = ?2")?
            .execute(params![id, source])?;
        c.prepare_cached(
            "UPDATE profiles SET doc = json_set(doc, '$.sources', json((
                 SELECT json_group_array(j.value) FROM json_each(profiles.doc, '$.sources') j
                 WHERE j.value != ?2)))
             WHERE id = ?1 AND json_type(doc, '$.sources') = 'array'",
        )?
        .execute(params![id, source])?;
    }
    Ok(())
}

/// Copies the whole WAL into the database and truncates it to zero bytes,
/// on a connection of its own (a checkpoint cannot run inside the writer's
/// transaction). The checkpoint thread's PASSIVE runs (nudged by this very
/// commit) make it busy for a moment, so it is retried for a while.
pub(in crate::sqlite) fn truncate_wal(path: &std::path::Path) -> Result<()> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    for _ in 0..100 {
        let busy: i64 = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))?;
        if busy == 0 {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    tracing::warn!("purge checkpoint could not complete: the WAL is still in use");
    Ok(())
}
