//! The delete notifications of a purge step, written in its transaction.

use chrono::{DateTime, Utc};

use crate::regulations::{delete_notification, notices};
use crate::sql::{Db, args};
use crate::{PERSONAS_SOURCE, PRIVACY_SOURCE, Result, SubjectPurge};

/// One notification event per subject with at least one enabled Webhooks
/// destination among its affected sources', and one pending delivery per
/// such destination, however many of the sources reach it (see
/// [`notices`]). The destinations of [`PERSONAS_SOURCE`] are those
/// connected to a live computed trait or audience.
pub(crate) async fn write_notifications(
    db: &impl Db,
    regulation_id: &str,
    subject: &SubjectPurge,
    name: &str,
    now: DateTime<Utc>,
) -> Result<()> {
    let of_computations = format!(
        "SELECT DISTINCT d.id FROM destinations d, computations c
         WHERE {} AND c.deleted_at IS NULL AND d.enabled AND d.kind = 'Webhooks'
         ORDER BY d.id",
        db.dialect().json_array_has("c.destination_ids", "d.id")
    );
    let mut by_source = Vec::new();
    for source in &subject.affected_sources {
        let ids = if source == PERSONAS_SOURCE {
            db.query_map(&of_computations, args![], |mut r| r.take(0))
                .await?
        } else {
            db.query_map(
                "SELECT d.id FROM destinations d
                 JOIN destination_sources ds ON ds.destination_id = d.id
                 WHERE ds.source_id = $1 AND d.enabled AND d.kind = 'Webhooks' ORDER BY d.id",
                args![source],
                |mut r| r.take::<String>(0),
            )
            .await?
        };
        by_source.push((source.as_str(), ids));
    }
    let notices = notices(&by_source);
    if notices.is_empty() {
        return Ok(());
    }
    let (message_id, body) = delete_notification(subject, now);
    let seq: i64 = db
        .query_one(
            "INSERT INTO events (source_id, message_id, event_type, received_at, body)
             VALUES ($1, $2, 'delete', $3, $4) RETURNING seq",
            args![PRIVACY_SOURCE, &message_id, now, &body],
        )
        .await?
        .get(0)?;
    for n in notices {
        let delivery: i64 = db
            .query_one(
                "INSERT INTO deliveries (event_seq, destination_id, source_id, state,
                                         attempts, next_attempt_at, updated_at)
                 VALUES ($1, $2, $3, 'pending', 0, $4, $4) RETURNING id",
                args![seq, &n.destination_id, &n.source_id, now],
            )
            .await?
            .get(0)?;
        db.execute(
            "INSERT INTO regulation_notifications
               (regulation_id, subject_id, source_id, destination_id, delivery_id, source_ids)
             VALUES ($1, $2, $3, $4, $5, $6)",
            args![
                regulation_id,
                name,
                &n.source_id,
                &n.destination_id,
                delivery,
                &serde_json::to_string(&n.source_ids)?
            ],
        )
        .await?;
    }
    Ok(())
}
