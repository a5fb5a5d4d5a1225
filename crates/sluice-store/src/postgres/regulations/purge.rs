//! The regulation job's scan for a subject's data and what a purge step
//! deletes of a subject; the lease and the step's frame are
//! `crate::queries::regulations::purge`. Sequences never hand a value out
//! twice, so purged rows are simply deleted (unlike SQLite's rowids).

use chrono::{DateTime, Utc};
use deadpool_postgres::{GenericClient, Transaction};

use super::super::profiles::scheduled::remove_profiles;
use super::super::rows::{backend, get, ms};
use crate::queries::engine::{self, Removal};
use crate::queries::regulations::purge as job;
use crate::regulations::{identity_parts, subject_index};
use crate::sql::postgres::PgRef;
use crate::{PRIVACY_SOURCE, RegulationCommit, Result, SubjectData, SubjectPurge};

pub(super) async fn find(
    c: &impl GenericClient,
    user_ids: &[String],
    source_id: Option<&str>,
) -> Result<Vec<SubjectData>> {
    let mut found = vec![SubjectData::default(); user_ids.len()];
    let mut identities: Vec<(String, usize)> = Vec::new();
    for (i, user_id) in user_ids.iter().enumerate() {
        let key = format!("user:{user_id}");
        identities.push((key.clone(), i));
        let rows = c
            .query(
                "SELECT l.profile_id, l.identity FROM profile_identities u
                 JOIN profile_identities l ON l.profile_id = u.profile_id
                 WHERE u.identity = $1",
                &[&key],
            )
            .await
            .map_err(backend)?;
        for row in &rows {
            let profile: String = get(row, 0)?;
            if !found[i].profile_ids.contains(&profile) {
                found[i].profile_ids.push(profile);
            }
            identities.push((get(row, 1)?, i));
        }
    }
    for data in &mut found {
        data.profile_sources = profile_sources(c, &data.profile_ids).await?;
    }
    let index = subject_index(&identities);
    let users: Vec<&str> = identities
        .iter()
        .filter_map(|(id, _)| id.strip_prefix("user:"))
        .collect();
    let anons: Vec<&str> = identities
        .iter()
        .filter_map(|(id, _)| id.strip_prefix("anon:"))
        .collect();
    let all: Vec<&str> = users.iter().chain(anons.iter()).copied().collect();
    let rows = c
        .query(
            "SELECT seq, source_id, j->>'userId', j->>'anonymousId', j->>'previousId'
             FROM (SELECT seq, source_id, body::jsonb AS j FROM events
                   WHERE source_id <> $1 AND ($2::text IS NULL OR source_id = $2)) e
             WHERE j->>'userId' = ANY($3) OR j->>'anonymousId' = ANY($4)
                OR j->>'previousId' = ANY($5)",
            &[&PRIVACY_SOURCE, &source_id, &users, &anons, &all],
        )
        .await
        .map_err(backend)?;
    for row in &rows {
        if let Some(i) = identity_parts(&index, get(row, 2)?, get(row, 3)?, get(row, 4)?) {
            found[i].events.push((get(row, 0)?, get(row, 1)?));
        }
    }
    Ok(found)
}

/// The sources in the profiles' documents and behavioural events, sorted.
async fn profile_sources(c: &impl GenericClient, profile_ids: &[String]) -> Result<Vec<String>> {
    if profile_ids.is_empty() {
        return Ok(Vec::new());
    }
    let rows = c
        .query(
            "SELECT source_id FROM profile_events WHERE profile_id = ANY($1)
             UNION SELECT jsonb_array_elements_text(doc::jsonb -> 'sources') FROM profiles
                   WHERE id = ANY($1) AND jsonb_typeof(doc::jsonb -> 'sources') = 'array'
             ORDER BY 1",
            &[&profile_ids],
        )
        .await
        .map_err(backend)?;
    rows.iter().map(|r| get(r, 0)).collect()
}

/// One purge step in a transaction of its own (see `job::commit`).
pub(super) async fn commit(
    client: &mut deadpool_postgres::Object,
    commit: &RegulationCommit,
) -> Result<bool> {
    let tx = client.transaction().await.map_err(backend)?;
    let purger = Purger {
        tx: &tx,
        now: commit.now,
    };
    let done = job::commit(&PgRef(&tx), commit, &purger).await?;
    tx.commit().await.map_err(backend)?;
    Ok(done)
}

/// Purges in the step's transaction; `now` makes stripped profiles due.
struct Purger<'a, 't> {
    tx: &'a Transaction<'t>,
    now: DateTime<Utc>,
}

impl job::PurgeSubject for Purger<'_, '_> {
    async fn purge(&self, subject: &SubjectPurge, scope: Option<&str>) -> Result<()> {
        purge(self.tx, subject, scope, self.now).await
    }
}

/// Purges a subject; `scope` keeps the profiles but takes that source out
/// of them (see `strip_source`).
async fn purge(
    tx: &Transaction<'_>,
    subject: &SubjectPurge,
    scope: Option<&str>,
    now: DateTime<Utc>,
) -> Result<()> {
    let profiles = scope.is_none();
    if let Some(source) = scope {
        strip_source(tx, &subject.profile_ids, source, ms(now)).await?;
    }
    if profiles {
        // First: it locks computations, which an edit locks before the
        // deliveries this deletes (see `profiles/scheduled.rs`).
        remove_profiles(tx, &subject.profile_ids).await?;
    }
    let seqs = &subject.event_seqs;
    for sql in [
        "DELETE FROM attempts WHERE delivery_id IN
           (SELECT id FROM deliveries WHERE event_seq = ANY($1))",
        "DELETE FROM deliveries WHERE event_seq = ANY($1)",
        "DELETE FROM events WHERE seq = ANY($1)",
    ] {
        tx.execute(sql, &[seqs]).await.map_err(backend)?;
    }
    if profiles {
        engine::remove_profiles(&PgRef(tx), &subject.profile_ids, Removal::Purged).await?;
    }
    Ok(())
}

/// A source-scoped purge keeps the profiles (they are workspace-wide) but
/// takes the source out of them: its behavioural rows, and its name from
/// the document's `sources`, so a rerun finds nothing of it left. Each
/// profile is made due at `now`, in this transaction (so a crash cannot
/// lose it): the profile engine's next sweep re-evaluates it from the calls
/// left and sends what changed. The purge never calls the engine.
async fn strip_source(tx: &Transaction<'_>, ids: &[String], source: &str, now: i64) -> Result<()> {
    engine::forget_source(&PgRef(tx), ids, source, now).await?;
    tx.execute(
        "UPDATE profiles SET doc = jsonb_set(doc::jsonb, '{sources}', COALESCE(
             (SELECT jsonb_agg(s) FROM jsonb_array_elements_text(doc::jsonb -> 'sources') s
              WHERE s <> $2), '[]'::jsonb))::text
         WHERE id = ANY($1) AND jsonb_typeof(doc::jsonb -> 'sources') = 'array'",
        &[&ids, &source],
    )
    .await
    .map_err(backend)?;
    Ok(())
}
