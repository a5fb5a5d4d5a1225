//! The delete notifications of a purge step: one event per subject, one
//! pending delivery per destination (see `sqlite/regulations/notify.rs`).

use chrono::{DateTime, Utc};
use deadpool_postgres::{GenericClient, Transaction};

use super::super::rows::{backend, get, json_error, ms};
use crate::regulations::{delete_notification, notices};
use crate::{PERSONAS_SOURCE, PRIVACY_SOURCE, Result, SubjectPurge};

/// Writes the notifications of one subject (see `write_notifications` in
/// `sqlite/regulations/notify.rs`).
pub(super) async fn notifications(
    tx: &Transaction<'_>,
    regulation_id: &str,
    subject: &SubjectPurge,
    name: &str,
    now: DateTime<Utc>,
) -> Result<()> {
    let mut by_source = Vec::new();
    for source in &subject.affected_sources {
        let rows = if source == PERSONAS_SOURCE {
            tx.query(
                "SELECT DISTINCT d.id FROM destinations d
                 JOIN computations c ON c.deleted_at IS NULL AND c.destination_ids::jsonb ? d.id
                 WHERE d.enabled AND d.kind = 'Webhooks' ORDER BY d.id",
                &[],
            )
            .await
        } else {
            tx.query(
                "SELECT d.id FROM destinations d
                 JOIN destination_sources ds ON ds.destination_id = d.id
                 WHERE ds.source_id = $1 AND d.enabled AND d.kind = 'Webhooks' ORDER BY d.id",
                &[source],
            )
            .await
        }
        .map_err(backend)?;
        let ids = rows
            .iter()
            .map(|r| get(r, 0))
            .collect::<Result<Vec<String>>>()?;
        by_source.push((source.as_str(), ids));
    }
    let notices = notices(&by_source);
    if notices.is_empty() {
        return Ok(());
    }
    let (message_id, body) = delete_notification(subject, now);
    let seq: i64 = get(
        &tx.query_one(
            "INSERT INTO events (source_id, message_id, event_type, received_at, body)
             VALUES ($1, $2, 'delete', $3, $4) RETURNING seq",
            &[&PRIVACY_SOURCE, &message_id, &ms(now), &body],
        )
        .await
        .map_err(backend)?,
        0,
    )?;
    for n in notices {
        let delivery: i64 = get(
            &tx.query_one(
                "INSERT INTO deliveries (event_seq, destination_id, source_id, state,
                                         attempts, next_attempt_at, updated_at)
                 VALUES ($1, $2, $3, 'pending', 0, $4, $4) RETURNING id",
                &[&seq, &n.destination_id, &n.source_id, &ms(now)],
            )
            .await
            .map_err(backend)?,
            0,
        )?;
        let sources = serde_json::to_string(&n.source_ids).map_err(json_error)?;
        tx.execute(
            "INSERT INTO regulation_notifications
               (regulation_id, subject_id, source_id, destination_id, delivery_id, source_ids)
             VALUES ($1, $2, $3, $4, $5, $6)",
            &[
                &regulation_id,
                &name,
                &n.source_id,
                &n.destination_id,
                &delivery,
                &sources,
            ],
        )
        .await
        .map_err(backend)?;
    }
    Ok(())
}
