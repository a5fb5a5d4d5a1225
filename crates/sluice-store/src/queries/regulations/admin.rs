//! Requests, suppressions and the reads of the admin API.

use crate::regulations::{source_ids, status};
use crate::sql::{Conn, Db, Row, Tx, args, limit};
use crate::{
    NewRegulation, Regulation, RegulationDetail, RegulationNotification, RegulationSubject, Result,
    StoreError, SuppressedCount, SuppressionChange,
};

/// Serializes suppression versions on PostgreSQL: versions are assigned
/// under this transaction-scoped advisory lock, so they commit in order and
/// pollers never skip one. (SQLite's one writer already does.)
const SUPPRESSION_LOCK: i64 = 0x5eed_0013;

const COLUMNS: &str = "r.id, r.regulation_type, r.source_id, r.status, r.purge, r.notify,
    r.created_at, r.finished_at,
    (SELECT count(*) FROM regulation_subjects s WHERE s.regulation_id = r.id),
    (SELECT count(*) FROM regulation_subjects s WHERE s.regulation_id = r.id AND s.done),
    r.error";

fn regulation(mut row: Row) -> Result<Regulation> {
    Ok(Regulation {
        id: row.take(0)?,
        regulation_type: row.take(1)?,
        source_id: row.take(2)?,
        status: row.take(3)?,
        purge: row.get(4)?,
        notify: row.get(5)?,
        created_at: row.get(6)?,
        finished_at: row.get(7)?,
        subjects: row.get(8)?,
        subjects_done: row.get(9)?,
        error: row.take(10)?,
    })
}

/// Saves a request with its subjects and, in the same transaction, its
/// suppression changes.
pub(crate) async fn create(conn: &mut impl Conn, new: &NewRegulation) -> Result<Regulation> {
    let tx = conn.begin().await?;
    let (state, finished) = if new.purge {
        (status::INITIALIZED, None)
    } else {
        (status::FINISHED, Some(new.now))
    };
    tx.execute(
        "INSERT INTO regulations (id, regulation_type, source_id, status, purge, notify,
                                  created_at, finished_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        args![
            &new.id,
            &new.regulation_type,
            &new.source_id,
            state,
            new.purge,
            new.notify,
            new.now,
            finished
        ],
    )
    .await?;
    let dialect = tx.dialect();
    tx.execute(
        &format!(
            "INSERT INTO regulation_subjects (regulation_id, position, subject_id, done)
             SELECT $1, position - 1, value, $3 FROM {}",
            dialect.numbered_list(2)
        ),
        args![&new.id, &new.subject_ids, !new.purge],
    )
    .await?;
    if let Some(active) = new.suppress {
        if let Some(lock) = dialect.xact_lock() {
            tx.execute(lock, args![SUPPRESSION_LOCK]).await?;
        }
        // `WHERE true`: SQLite would read `ON CONFLICT` as a join's `ON`.
        tx.execute(
            &format!(
                "INSERT INTO suppressions (user_id, active, version)
                 SELECT value, $2, (SELECT coalesce(max(version), 0) FROM suppressions) + position
                 FROM {} WHERE true
                 ON CONFLICT (user_id) DO UPDATE SET active = excluded.active,
                                                     version = excluded.version",
                dialect.numbered_list(1)
            ),
            args![&new.subject_ids, active],
        )
        .await?;
    }
    let found = get_one(&tx, &new.id).await?;
    tx.commit().await?;
    found.ok_or_else(|| StoreError::internal("regulation vanished"))
}

async fn get_one(db: &impl Db, id: &str) -> Result<Option<Regulation>> {
    let sql = format!("SELECT {COLUMNS} FROM regulations r WHERE r.id = $1");
    db.query_opt(&sql, args![id])
        .await?
        .map(regulation)
        .transpose()
}

pub(crate) async fn list(db: &impl Db, max: u32, before: Option<&str>) -> Result<Vec<Regulation>> {
    let Some(before) = before else {
        let sql = format!(
            "SELECT {COLUMNS} FROM regulations r ORDER BY r.created_at DESC, r.id DESC LIMIT $1"
        );
        return db.query_map(&sql, &[limit(max)], regulation).await;
    };
    // A cursor naming no regulation compares with NULL: an empty page.
    let sql = format!(
        "SELECT {COLUMNS} FROM regulations r
         WHERE (r.created_at, r.id) < (SELECT c.created_at, c.id FROM regulations c WHERE c.id = $2)
         ORDER BY r.created_at DESC, r.id DESC LIMIT $1"
    );
    db.query_map(&sql, args![limit(max), before], regulation)
        .await
}

pub(crate) async fn detail(db: &impl Db, id: &str) -> Result<Option<RegulationDetail>> {
    let Some(regulation) = get_one(db, id).await? else {
        return Ok(None);
    };
    let subjects = db
        .query_map(
            "SELECT subject_id, done, affected_sources, events_purged FROM regulation_subjects
             WHERE regulation_id = $1 ORDER BY position",
            args![id],
            |mut row| {
                let affected: String = row.take(2)?;
                Ok(RegulationSubject {
                    subject_id: row.take(0)?,
                    done: row.get(1)?,
                    affected_sources: serde_json::from_str(&affected).unwrap_or_default(),
                    events_purged: row.get(3)?,
                })
            },
        )
        .await?;
    let notifications = db
        .query_map(
            "SELECT n.subject_id, n.source_id, n.destination_id, n.delivery_id,
                    coalesce(d.state, 'purged'), coalesce(d.attempts, 0), n.source_ids
             FROM regulation_notifications n LEFT JOIN deliveries d ON d.id = n.delivery_id
             WHERE n.regulation_id = $1 ORDER BY n.delivery_id",
            args![id],
            |mut row| {
                let source_id: String = row.take(1)?;
                let sources: Option<String> = row.take(6)?;
                Ok(RegulationNotification {
                    subject_id: row.take(0)?,
                    source_ids: source_ids(sources.as_deref(), &source_id),
                    source_id,
                    destination_id: row.take(2)?,
                    delivery_id: row.get(3)?,
                    state: row.take(4)?,
                    attempts: row.get(5)?,
                })
            },
        )
        .await?;
    Ok(Some(RegulationDetail {
        regulation,
        subjects,
        notifications,
    }))
}

/// The oldest unfinished regulation with up to `max` of its pending
/// subjects, in request order.
pub(crate) async fn next(db: &impl Db, max: u32) -> Result<Option<(Regulation, Vec<String>)>> {
    let row = db
        .query_opt(
            "SELECT id FROM regulations WHERE finished_at IS NULL
             ORDER BY created_at, id LIMIT 1",
            args![],
        )
        .await?;
    let Some(mut row) = row else { return Ok(None) };
    let id: String = row.take(0)?;
    let Some(regulation) = get_one(db, &id).await? else {
        return Ok(None);
    };
    let pending = db
        .query_map(
            "SELECT subject_id FROM regulation_subjects WHERE regulation_id = $1 AND NOT done
             ORDER BY position LIMIT $2",
            args![&id, limit(max)],
            |mut r| r.take(0),
        )
        .await?;
    Ok(Some((regulation, pending)))
}

pub(crate) async fn suppressions(db: &impl Db, after: &str, max: u32) -> Result<Vec<String>> {
    db.query_map(
        "SELECT user_id FROM suppressions WHERE active AND user_id > $1
         ORDER BY user_id LIMIT $2",
        args![after, limit(max)],
        |mut r| r.take(0),
    )
    .await
}

pub(crate) async fn changes(
    db: &impl Db,
    version: i64,
    max: u32,
) -> Result<Vec<SuppressionChange>> {
    db.query_map(
        "SELECT version, user_id, active FROM suppressions WHERE version > $1
         ORDER BY version LIMIT $2",
        args![version, limit(max)],
        |mut r| {
            Ok(SuppressionChange {
                version: r.get(0)?,
                user_id: r.take(1)?,
                suppressed: r.get(2)?,
            })
        },
    )
    .await
}

pub(crate) async fn add_suppressed(db: &impl Db, counts: &[SuppressedCount]) -> Result<()> {
    for n in counts {
        db.execute(
            "INSERT INTO usage_suppressed (source_id, day, events) VALUES ($1, $2, $3)
             ON CONFLICT (source_id, day) DO UPDATE
             SET events = usage_suppressed.events + excluded.events",
            args![&n.source_id, &n.day, n.events],
        )
        .await?;
    }
    Ok(())
}

pub(crate) async fn suppressed_usage(
    db: &impl Db,
    source_id: &str,
    from: &str,
    to: &str,
) -> Result<Vec<SuppressedCount>> {
    db.query_map(
        "SELECT source_id, day, events FROM usage_suppressed
         WHERE source_id = $1 AND day >= $2 AND day <= $3 ORDER BY day",
        args![source_id, from, to],
        |mut r| {
            Ok(SuppressedCount {
                source_id: r.take(0)?,
                day: r.take(1)?,
                events: r.get(2)?,
            })
        },
    )
    .await
}
