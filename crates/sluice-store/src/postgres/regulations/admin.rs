//! Requests, suppressions and the reads of the admin API.

use deadpool_postgres::GenericClient;
use tokio_postgres::Row;

use super::super::rows::{backend, get, ms, opt_time, sql_limit, time, unsigned};
use crate::regulations::source_ids;
use crate::regulations::status;
use crate::{
    NewRegulation, Regulation, RegulationDetail, RegulationNotification, RegulationSubject, Result,
    StoreError, SuppressedCount, SuppressionChange,
};

/// Serializes suppression versions (see the module docs).
const SUPPRESSION_LOCK: i64 = 0x5eed_0013;

const COLUMNS: &str = "r.id, r.regulation_type, r.source_id, r.status, r.purge, r.notify,
    r.created_at, r.finished_at,
    (SELECT count(*) FROM regulation_subjects s WHERE s.regulation_id = r.id),
    (SELECT count(*) FROM regulation_subjects s WHERE s.regulation_id = r.id AND s.done),
    r.error";

fn regulation(row: &Row) -> Result<Regulation> {
    Ok(Regulation {
        id: get(row, 0)?,
        regulation_type: get(row, 1)?,
        source_id: get(row, 2)?,
        status: get(row, 3)?,
        purge: get(row, 4)?,
        notify: get(row, 5)?,
        created_at: time(row, 6)?,
        finished_at: opt_time(row, 7)?,
        subjects: unsigned(row, 8)?,
        subjects_done: unsigned(row, 9)?,
        error: get(row, 10)?,
    })
}

pub(super) async fn create(
    client: &mut deadpool_postgres::Object,
    new: &NewRegulation,
) -> Result<Regulation> {
    let tx = client.transaction().await.map_err(backend)?;
    let now = ms(new.now);
    let (state, finished) = if new.purge {
        (status::INITIALIZED, None)
    } else {
        (status::FINISHED, Some(now))
    };
    tx.execute(
        "INSERT INTO regulations (id, regulation_type, source_id, status, purge, notify,
                                  created_at, finished_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        &[
            &new.id,
            &new.regulation_type,
            &new.source_id,
            &state,
            &new.purge,
            &new.notify,
            &now,
            &finished,
        ],
    )
    .await
    .map_err(backend)?;
    tx.execute(
        "INSERT INTO regulation_subjects (regulation_id, position, subject_id, done)
         SELECT $1, p - 1, s, $3 FROM UNNEST($2::text[]) WITH ORDINALITY AS t(s, p)",
        &[&new.id, &new.subject_ids, &!new.purge],
    )
    .await
    .map_err(backend)?;
    if let Some(active) = new.suppress {
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&SUPPRESSION_LOCK])
            .await
            .map_err(backend)?;
        tx.execute(
            "INSERT INTO suppressions (user_id, active, version)
             SELECT s, $2, (SELECT coalesce(max(version), 0) FROM suppressions) + p
             FROM UNNEST($1::text[]) WITH ORDINALITY AS t(s, p)
             ON CONFLICT (user_id) DO UPDATE SET active = excluded.active,
                                                 version = excluded.version",
            &[&new.subject_ids, &active],
        )
        .await
        .map_err(backend)?;
    }
    let found = get_one(&tx, &new.id).await?;
    tx.commit().await.map_err(backend)?;
    found.ok_or_else(|| StoreError::internal("regulation vanished"))
}

async fn get_one(c: &impl GenericClient, id: &str) -> Result<Option<Regulation>> {
    let row = c
        .query_opt(
            &format!("SELECT {COLUMNS} FROM regulations r WHERE r.id = $1"),
            &[&id],
        )
        .await
        .map_err(backend)?;
    row.as_ref().map(regulation).transpose()
}

pub(super) async fn list(c: &impl GenericClient, limit: u32) -> Result<Vec<Regulation>> {
    let rows = c
        .query(
            &format!(
                "SELECT {COLUMNS} FROM regulations r
                 ORDER BY r.created_at DESC, r.id DESC LIMIT $1"
            ),
            &[&sql_limit(limit)],
        )
        .await
        .map_err(backend)?;
    rows.iter().map(regulation).collect()
}

pub(super) async fn detail(c: &impl GenericClient, id: &str) -> Result<Option<RegulationDetail>> {
    let Some(regulation) = get_one(c, id).await? else {
        return Ok(None);
    };
    let rows = c
        .query(
            "SELECT subject_id, done, affected_sources, events_purged FROM regulation_subjects
             WHERE regulation_id = $1 ORDER BY position",
            &[&id],
        )
        .await
        .map_err(backend)?;
    let mut subjects = Vec::with_capacity(rows.len());
    for row in &rows {
        let affected: String = get(row, 2)?;
        subjects.push(RegulationSubject {
            subject_id: get(row, 0)?,
            done: get(row, 1)?,
            affected_sources: serde_json::from_str(&affected).unwrap_or_default(),
            events_purged: unsigned(row, 3)?,
        });
    }
    let rows = c
        .query(
            "SELECT n.subject_id, n.source_id, n.destination_id, n.delivery_id,
                    coalesce(d.state, 'purged'), coalesce(d.attempts, 0)::bigint, n.source_ids
             FROM regulation_notifications n LEFT JOIN deliveries d ON d.id = n.delivery_id
             WHERE n.regulation_id = $1 ORDER BY n.delivery_id",
            &[&id],
        )
        .await
        .map_err(backend)?;
    let mut notifications = Vec::with_capacity(rows.len());
    for row in &rows {
        let source_id: String = get(row, 1)?;
        let sources: Option<String> = get(row, 6)?;
        notifications.push(RegulationNotification {
            subject_id: get(row, 0)?,
            source_ids: source_ids(sources.as_deref(), &source_id),
            source_id,
            destination_id: get(row, 2)?,
            delivery_id: get(row, 3)?,
            state: get(row, 4)?,
            attempts: unsigned(row, 5)?,
        });
    }
    Ok(Some(RegulationDetail {
        regulation,
        subjects,
        notifications,
    }))
}

pub(super) async fn next(
    c: &impl GenericClient,
    limit: u32,
) -> Result<Option<(Regulation, Vec<String>)>> {
    let row = c
        .query_opt(
            "SELECT id FROM regulations WHERE finished_at IS NULL
             ORDER BY created_at, id LIMIT 1",
            &[],
        )
        .await
        .map_err(backend)?;
    let Some(row) = row else { return Ok(None) };
    let id: String = get(&row, 0)?;
    let Some(regulation) = get_one(c, &id).await? else {
        return Ok(None);
    };
    let rows = c
        .query(
            "SELECT subject_id FROM regulation_subjects WHERE regulation_id = $1 AND NOT done
             ORDER BY position LIMIT $2",
            &[&id, &sql_limit(limit)],
        )
        .await
        .map_err(backend)?;
    let pending = rows.iter().map(|r| get(r, 0)).collect::<Result<_>>()?;
    Ok(Some((regulation, pending)))
}

pub(super) async fn suppressions(
    c: &impl GenericClient,
    after: &str,
    limit: u32,
) -> Result<Vec<String>> {
    let rows = c
        .query(
            "SELECT user_id FROM suppressions WHERE active AND user_id > $1
             ORDER BY user_id LIMIT $2",
            &[&after, &sql_limit(limit)],
        )
        .await
        .map_err(backend)?;
    rows.iter().map(|r| get(r, 0)).collect()
}

pub(super) async fn changes(
    c: &impl GenericClient,
    version: i64,
    limit: u32,
) -> Result<Vec<SuppressionChange>> {
    let rows = c
        .query(
            "SELECT version, user_id, active FROM suppressions WHERE version > $1
             ORDER BY version LIMIT $2",
            &[&version, &sql_limit(limit)],
        )
        .await
        .map_err(backend)?;
    rows.iter()
        .map(|r| {
            Ok(SuppressionChange {
                version: get(r, 0)?,
                user_id: get(r, 1)?,
                suppressed: get(r, 2)?,
            })
        })
        .collect()
}

pub(super) async fn add_suppressed(
    c: &impl GenericClient,
    counts: &[SuppressedCount],
) -> Result<()> {
    for n in counts {
        let events = i64::try_from(n.events).unwrap_or(i64::MAX);
        c.execute(
            "INSERT INTO usage_suppressed (source_id, day, events) VALUES ($1, $2, $3)
             ON CONFLICT (source_id, day) DO UPDATE
             SET events = usage_suppressed.events + excluded.events",
            &[&n.source_id, &n.day, &events],
        )
        .await
        .map_err(backend)?;
    }
    Ok(())
}

pub(super) async fn suppressed_usage(
    c: &impl GenericClient,
    source_id: &str,
    from: &str,
    to: &str,
) -> Result<Vec<SuppressedCount>> {
    let rows = c
        .query(
            "SELECT source_id, day, events FROM usage_suppressed
             WHERE source_id = $1 AND day >= $2 AND day <= $3 ORDER BY day",
            &[&source_id, &from, &to],
        )
        .await
        .map_err(backend)?;
    rows.iter()
        .map(|r| {
            Ok(SuppressedCount {
                source_id: get(r, 0)?,
                day: get(r, 1)?,
                events: unsigned(r, 2)?,
            })
        })
        .collect()
}
