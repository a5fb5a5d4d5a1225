//! Requests, suppressions and the reads of the admin API.

use rusqlite::{Connection, OptionalExtension, Row, params};

use super::super::rows::{count, ms, opt_time, small, sql_limit, time};
use crate::regulations::source_ids;
use crate::regulations::status;
use crate::{
    NewRegulation, Regulation, RegulationDetail, RegulationNotification, RegulationSubject, Result,
    SuppressedCount, SuppressionChange,
};

const COLUMNS: &str = "r.id, r.regulation_type, r.source_id, r.status, r.purge, r.notify,
    r.created_at, r.finished_at,
    (SELECT count(*) FROM regulation_subjects s WHERE s.regulation_id = r.id),
    (SELECT count(*) FROM regulation_subjects s WHERE s.regulation_id = r.id AND s.done = 1),
    r.error";

fn regulation(row: &Row<'_>) -> rusqlite::Result<Regulation> {
    Ok(Regulation {
        id: row.get(0)?,
        regulation_type: row.get(1)?,
        source_id: row.get(2)?,
        status: row.get(3)?,
        purge: row.get(4)?,
        notify: row.get(5)?,
        created_at: time(row, 6)?,
        finished_at: opt_time(row, 7)?,
        subjects: count(row, 8)?,
        subjects_done: count(row, 9)?,
        error: row.get(10)?,
    })
}

pub(super) fn create(c: &Connection, new: &NewRegulation) -> Result<Regulation> {
    let now = ms(new.now);
    let (state, finished) = if new.purge {
        (status::INITIALIZED, None)
    } else {
        (status::FINISHED, Some(now))
    };
    c.prepare_cached(
        "INSERT INTO regulations (id, regulation_type, source_id, status, purge, notify,
                                  created_at, finished_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        new.id,
        new.regulation_type,
        new.source_id,
        state,
        new.purge,
        new.notify,
        now,
        finished
    ])?;
    let mut subject = c.prepare_cached(
        "INSERT INTO regulation_subjects (regulation_id, position, subject_id, done)
         VALUES (?1, ?2, ?3, ?4)",
    )?;
    for (position, id) in new.subject_ids.iter().enumerate() {
        let position = i64::try_from(position).unwrap_or(i64::MAX);
        subject.execute(params![new.id, position, id, !new.purge])?;
    }
    if let Some(active) = new.suppress {
        let mut version: i64 = c
            .prepare_cached("SELECT coalesce(max(version), 0) FROM suppressions")?
            .query_row([], |r| r.get(0))?;
        let mut upsert = c.prepare_cached(
            "INSERT INTO suppressions (user_id, active, version) VALUES (?1, ?2, ?3)
             ON CONFLICT (user_id) DO UPDATE SET active = excluded.active,
                                                 version = excluded.version",
        )?;
        for id in &new.subject_ids {
            version += 1;
            upsert.execute(params![id, active, version])?;
        }
    }
    let found = get_one(c, &new.id)?;
    found.ok_or_else(|| crate::StoreError::internal("regulation vanished"))
}

fn get_one(c: &Connection, id: &str) -> Result<Option<Regulation>> {
    Ok(c.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM regulations r WHERE r.id = ?1"
    ))?
    .query_row([id], regulation)
    .optional()?)
}

pub(super) fn list(c: &Connection, limit: u32) -> Result<Vec<Regulation>> {
    let mut stmt = c.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM regulations r ORDER BY r.created_at DESC, r.id DESC LIMIT ?1"
    ))?;
    let rows = stmt.query_map([sql_limit(limit)], regulation)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

pub(super) fn get(c: &Connection, id: &str) -> Result<Option<RegulationDetail>> {
    let Some(regulation) = get_one(c, id)? else {
        return Ok(None);
    };
    let mut stmt = c.prepare_cached(
        "SELECT subject_id, done, affected_sources, events_purged FROM regulation_subjects
         WHERE regulation_id = ?1 ORDER BY position",
    )?;
    let subjects = stmt
        .query_map([id], |row| {
            let affected: String = row.get(2)?;
            Ok(RegulationSubject {
                subject_id: row.get(0)?,
                done: row.get(1)?,
                affected_sources: serde_json::from_str(&affected).unwrap_or_default(),
                events_purged: count(row, 3)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut stmt = c.prepare_cached(
        "SELECT n.subject_id, n.source_id, n.destination_id, n.delivery_id,
                coalesce(d.state, 'purged'), coalesce(d.attempts, 0), n.source_ids
         FROM regulation_notifications n LEFT JOIN deliveries d ON d.id = n.delivery_id
         WHERE n.regulation_id = ?1 ORDER BY n.delivery_id",
    )?;
    let notifications = stmt
        .query_map([id], |row| {
            let source_id: String = row.get(1)?;
            let sources: Option<String> = row.get(6)?;
            Ok(RegulationNotification {
                subject_id: row.get(0)?,
                source_ids: source_ids(sources.as_deref(), &source_id),
                source_id,
                destination_id: row.get(2)?,
                delivery_id: row.get(3)?,
                state: row.get(4)?,
                attempts: small(row, 5)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(Some(RegulationDetail {
        regulation,
        subjects,
        notifications,
    }))
}

pub(super) fn next(c: &Connection, limit: u32) -> Result<Option<(Regulation, Vec<String>)>> {
    let id: Option<String> = c
        .prepare_cached(
            "SELECT id FROM regulations WHERE finished_at IS NULL
             ORDER BY created_at, id LIMIT 1",
        )?
        .query_row([], |r| r.get(0))
        .optional()?;
    let Some(id) = id else { return Ok(None) };
    let Some(regulation) = get_one(c, &id)? else {
        return Ok(None);
    };
    let mut stmt = c.prepare_cached(
        "SELECT subject_id FROM regulation_subjects WHERE regulation_id = ?1 AND done = 0
         ORDER BY position LIMIT ?2",
    )?;
    let pending = stmt
        .query_map(params![id, sql_limit(limit)], |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<String>>>()?;
    Ok(Some((regulation, pending)))
}

pub(super) fn suppressions(c: &Connection, after: &str, limit: u32) -> Result<Vec<String>> {
    let mut stmt = c.prepare_cached(
        "SELECT user_id FROM suppressions WHERE active = 1 AND user_id > ?1
         ORDER BY user_id LIMIT ?2",
    )?;
    let rows = stmt.query_map(params![after, sql_limit(limit)], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

pub(super) fn changes(c: &Connection, version: i64, limit: u32) -> Result<Vec<SuppressionChange>> {
    let mut stmt = c.prepare_cached(
        "SELECT version, user_id, active FROM suppressions WHERE version > ?1
         ORDER BY version LIMIT ?2",
    )?;
    let rows = stmt.query_map(params![version, sql_limit(limit)], |r| {
        Ok(SuppressionChange {
            version: r.get(0)?,
            user_id: r.get(1)?,
            suppressed: r.get(2)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

pub(super) fn add_suppressed(c: &Connection, counts: &[SuppressedCount]) -> Result<()> {
    let mut stmt = c.prepare_cached(
        "INSERT INTO usage_suppressed (source_id, day, events) VALUES (?1, ?2, ?3)
         ON CONFLICT (source_id, day) DO UPDATE SET events = events + excluded.events",
    )?;
    for n in counts {
        let events = i64::try_from(n.events).unwrap_or(i64::MAX);
        stmt.execute(params![n.source_id, n.day, events])?;
    }
    Ok(())
}

pub(super) fn suppressed_usage(
    c: &Connection,
    source_id: &str,
    from: &str,
    to: &str,
) -> Result<Vec<SuppressedCount>> {
    let mut stmt = c.prepare_cached(
        "SELECT source_id, day, events FROM usage_suppressed
         WHERE source_id = ?1 AND day >= ?2 AND day <= ?3 ORDER BY day",
    )?;
    let rows = stmt.query_map(params![source_id, from, to], |r| {
        Ok(SuppressedCount {
            source_id: r.get(0)?,
            day: r.get(1)?,
            events: count(r, 2)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}
