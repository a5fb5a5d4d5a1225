//! The delete notifications of a purge step, written in its transaction.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, params};

use super::super::rows::ms;
use crate::regulations::{delete_notification, notices};
use crate::{PERSONAS_SOURCE, PRIVACY_SOURCE, Result, SubjectPurge};

/// One notification event per subject with at least one enabled Webhooks
/// destination among its affected sources', and one pending delivery per
/// such destination, however many of the sources reach it (see
/// [`notices`]). The destinations of [`PERSONAS_SOURCE`] are those
/// connected to a live computed trait or audience.
pub(super) fn write_notifications(
    c: &Connection,
    regulation_id: &str,
    subject: &SubjectPurge,
    name: &str,
    now: DateTime<Utc>,
) -> Result<()> {
    let mut destinations_of = c.prepare_cached(
        "SELECT d.id FROM destinations d
         JOIN destination_sources ds ON ds.destination_id = d.id
         WHERE ds.source_id = ?1 AND d.enabled = 1 AND d.kind = 'Webhooks' ORDER BY d.id",
    )?;
    let mut of_computations = c.prepare_cached(
        "SELECT DISTINCT d.id FROM destinations d, computations c, json_each(c.destination_ids) j
         WHERE j.value = d.id AND c.deleted_at IS NULL AND d.enabled = 1 AND d.kind = 'Webhooks'
         ORDER BY d.id",
    )?;
    let mut by_source = Vec::new();
    for source in &subject.affected_sources {
        let ids = if source == PERSONAS_SOURCE {
            of_computations
                .query_map([], |r| r.get(0))?
                .collect::<rusqlite::Result<Vec<String>>>()?
        } else {
            destinations_of
                .query_map([source], |r| r.get(0))?
                .collect::<rusqlite::Result<Vec<String>>>()?
        };
        by_source.push((source.as_str(), ids));
    }
    let notices = notices(&by_source);
    if notices.is_empty() {
        return Ok(());
    }
    let (message_id, body) = delete_notification(subject, now);
    let seq = c
        .prepare_cached(
            "INSERT INTO events (source_id, message_id, event_type, received_at, body)
             VALUES (?1, ?2, 'delete', ?3, ?4)",
        )?
        .insert(params![PRIVACY_SOURCE, message_id, ms(now), body])?;
    for n in notices {
        let delivery = c
            .prepare_cached(
                "INSERT INTO deliveries (event_seq, destination_id, source_id, state,
                                         attempts, next_attempt_at, updated_at)
                 VALUES (?1, ?2, ?3, 'pending', 0, ?4, ?4)",
            )?
            .insert(params![seq, n.destination_id, n.source_id, ms(now)])?;
        c.prepare_cached(
            "INSERT INTO regulation_notifications
               (regulation_id, subject_id, source_id, destination_id, delivery_id, source_ids)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?
        .execute(params![
            regulation_id,
            name,
            n.source_id,
            n.destination_id,
            delivery,
            serde_json::to_string(&n.source_ids)?
        ])?;
    }
    Ok(())
}
