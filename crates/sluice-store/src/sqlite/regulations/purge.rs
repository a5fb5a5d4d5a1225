//! The regulation job's scan for a subject's data (on a read connection,
//! so ingest is not held up) and what a purge step deletes of a subject;
//! the lease and the step's frame are `crate::queries::regulations::purge`.

use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};

use super::super::rows::ms;
use super::super::tombstones;
use crate::queries::engine::{self, Removal};
use crate::queries::regulations::purge as job;
use crate::regulations::{identity_parts, subject_index};
use crate::sql::sqlite::{Lite, ready};
use crate::{PRIVACY_SOURCE, RegulationCommit, Result, SubjectData, SubjectPurge};

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

/// One purge step on the writer (see `job::commit`).
pub(super) fn commit(c: &Connection, commit: &RegulationCommit) -> Result<bool> {
    let purger = Purger {
        c,
        now: ms(commit.now),
    };
    ready(job::commit(&Lite(c), commit, &purger))
}

/// Purges on the writer's connection; `now` makes stripped profiles due.
struct Purger<'c> {
    c: &'c Connection,
    now: i64,
}

impl job::PurgeSubject for Purger<'_> {
    async fn purge(&self, subject: &SubjectPurge, scope: Option<&str>) -> Result<()> {
        purge_events(self.c, &subject.event_seqs)?;
        match scope {
            None => purge_profiles(self.c, &subject.profile_ids),
            Some(source) => strip_source(self.c, &subject.profile_ids, source, self.now),
        }
    }
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
    }
    ready(engine::remove_profiles(&Lite(c), ids, Removal::Purged))
}

/// A source-scoped purge keeps the profiles (they are workspace-wide) but
/// takes the source out of them: its behavioural rows, and its name from
/// the document's `sources`, so a rerun finds nothing of it left. Each
/// profile is made due at `now`, in this transaction (so a crash cannot
/// lose it): the profile engine's next sweep re-evaluates it from the calls
/// left and sends what changed. The purge never calls the engine.
fn strip_source(c: &Connection, ids: &[String], source: &str, now: i64) -> Result<()> {
    ready(engine::forget_source(&Lite(c), ids, source, now))?;
    for id in ids {
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
