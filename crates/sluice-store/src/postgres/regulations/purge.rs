//! The regulation job: its lease, the scan for a subject's data and the
//! one-transaction purge. Sequences never hand a value out twice, so purged
//! rows are simply deleted (unlike SQLite's rowids).

use std::time::Duration;

use chrono::{DateTime, Utc};
use deadpool_postgres::{GenericClient, Transaction};

use super::super::profiles::scheduled::remove_profiles;
use super::super::rows::{backend, big, get, ms};
use crate::queries::regulations::notify::write_notifications;
use crate::regulations::{identity_parts, pseudonym, status, subject_index};
use crate::sql::postgres::PgRef;
use crate::{PRIVACY_SOURCE, RegulationCommit, Result, SubjectData, SubjectPurge};

pub(super) async fn take_lease(
    c: &impl GenericClient,
    owner: &str,
    now: DateTime<Utc>,
    ttl: Duration,
) -> Result<bool> {
    let until = ms(now).saturating_add(big(ttl.as_millis()));
    let taken = c
        .execute(
            "UPDATE regulation_engine SET lease_owner = $1, lease_until = $2
             WHERE id = 1 AND (lease_owner IS NULL OR lease_owner = $1 OR lease_until < $3)",
            &[&owner, &until, &ms(now)],
        )
        .await
        .map_err(backend)?;
    Ok(taken == 1)
}

pub(super) async fn release_lease(c: &impl GenericClient, owner: &str) -> Result<()> {
    c.execute(
        "UPDATE regulation_engine SET lease_owner = NULL, lease_until = NULL
         WHERE id = 1 AND lease_owner = $1",
        &[&owner],
    )
    .await
    .map_err(backend)?;
    Ok(())
}

/// Takes every partition of the profile engine whoever holds it; returns
/// whether `owner` held them all unexpired already (see the trait docs).
/// The row locks order it against the engine's commits, which lock the
/// rows of the partitions they name.
pub(super) async fn seize_profile_lease(
    client: &mut deadpool_postgres::Object,
    owner: &str,
    now: DateTime<Utc>,
    ttl: Duration,
) -> Result<bool> {
    let tx = client.transaction().await.map_err(backend)?;
    let rows = tx
        .query(
            "SELECT lease_owner, lease_until FROM profile_engine ORDER BY id FOR UPDATE",
            &[],
        )
        .await
        .map_err(backend)?;
    let mut held = !rows.is_empty();
    for row in &rows {
        let holder: Option<String> = get(row, 0)?;
        let until: Option<i64> = get(row, 1)?;
        held &= holder.as_deref() == Some(owner) && until.is_some_and(|u| u >= ms(now));
    }
    let new_until = ms(now).saturating_add(big(ttl.as_millis()));
    tx.execute(
        "UPDATE profile_engine SET lease_owner = $1, lease_until = $2",
        &[&owner, &new_until],
    )
    .await
    .map_err(backend)?;
    tx.commit().await.map_err(backend)?;
    Ok(held)
}

/// Marks the regulation `FAILED` (see the trait docs).
pub(super) async fn fail(
    client: &mut deadpool_postgres::Object,
    owner: &str,
    id: &str,
    error: &str,
    now: DateTime<Utc>,
) -> Result<bool> {
    let tx = client.transaction().await.map_err(backend)?;
    let holder: Option<String> = get(
        &tx.query_one(
            "SELECT lease_owner FROM regulation_engine WHERE id = 1 FOR UPDATE",
            &[],
        )
        .await
        .map_err(backend)?,
        0,
    )?;
    if holder.as_deref() != Some(owner) {
        return Ok(false);
    }
    let changed = tx
        .execute(
            "UPDATE regulations SET status = $2, error = $3, finished_at = $4
             WHERE id = $1 AND finished_at IS NULL",
            &[&id, &status::FAILED, &error, &ms(now)],
        )
        .await
        .map_err(backend)?;
    tx.commit().await.map_err(backend)?;
    Ok(changed == 1)
}

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

pub(super) async fn commit(
    client: &mut deadpool_postgres::Object,
    commit: &RegulationCommit,
) -> Result<bool> {
    let tx = client.transaction().await.map_err(backend)?;
    let holder: Option<String> = get(
        &tx.query_one(
            "SELECT lease_owner FROM regulation_engine WHERE id = 1 FOR UPDATE",
            &[],
        )
        .await
        .map_err(backend)?,
        0,
    )?;
    if holder.as_deref() != Some(commit.owner.as_str()) {
        return Ok(false);
    }
    let row = tx
        .query_one(
            "SELECT notify, source_id FROM regulations WHERE id = $1",
            &[&commit.regulation_id],
        )
        .await
        .map_err(backend)?;
    let notify: bool = get(&row, 0)?;
    let scoped: Option<String> = get(&row, 1)?;
    for subject in &commit.subjects {
        let pending = tx
            .query_opt(
                "SELECT position FROM regulation_subjects
                 WHERE regulation_id = $1 AND subject_id = $2 AND NOT done",
                &[&commit.regulation_id, &subject.subject_id],
            )
            .await
            .map_err(backend)?;
        let Some(pending) = pending else { continue };
        let position: i64 = get(&pending, 0)?;
        purge(&tx, subject, scoped.as_deref(), commit.now).await?;
        let name = pseudonym(&subject.subject_id);
        if notify {
            write_notifications(
                &PgRef(&tx),
                &commit.regulation_id,
                subject,
                &name,
                commit.now,
            )
            .await?;
        }
        tx.execute(
            "UPDATE regulation_subjects SET done = true, subject_id = $3,
                    affected_sources = $4, events_purged = $5
             WHERE regulation_id = $1 AND position = $2",
            &[
                &commit.regulation_id,
                &position,
                &name,
                &serde_json::to_string(&subject.affected_sources).unwrap_or_default(),
                &big(subject.event_seqs.len()),
            ],
        )
        .await
        .map_err(backend)?;
    }
    let left: i64 = get(
        &tx.query_one(
            "SELECT count(*) FROM regulation_subjects WHERE regulation_id = $1 AND NOT done",
            &[&commit.regulation_id],
        )
        .await
        .map_err(backend)?,
        0,
    )?;
    let (state, finished) = if left == 0 && commit.subjects.is_empty() {
        (status::FINISHED, Some(ms(commit.now)))
    } else {
        (status::RUNNING, None)
    };
    tx.execute(
        "UPDATE regulations SET status = $2, finished_at = $3 WHERE id = $1",
        &[&commit.regulation_id, &state, &finished],
    )
    .await
    .map_err(backend)?;
    tx.commit().await.map_err(backend)?;
    Ok(true)
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
        let ids = &subject.profile_ids;
        for sql in [
            "DELETE FROM profile_identities WHERE profile_id = ANY($1)",
            "DELETE FROM computed_values WHERE profile_id = ANY($1)",
            "DELETE FROM profiles WHERE id = ANY($1)",
            "DELETE FROM profile_events WHERE profile_id = ANY($1)",
        ] {
            tx.execute(sql, &[ids]).await.map_err(backend)?;
        }
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
    tx.execute(
        "UPDATE profiles SET next_change_at = $2
         WHERE id = ANY($1) AND (next_change_at IS NULL OR next_change_at > $2)",
        &[&ids, &now],
    )
    .await
    .map_err(backend)?;
    tx.execute(
        "DELETE FROM profile_events WHERE profile_id = ANY($1) AND source_id = $2",
        &[&ids, &source],
    )
    .await
    .map_err(backend)?;
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
