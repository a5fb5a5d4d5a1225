//! The delete notifications of a purge step, written in its transaction.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use rusqlite::{Connection, params};

use super::super::rows::ms;
use crate::regulations::delete_notification;
use crate::{PERSONAS_SOURCE, PRIVACY_SOURCE, Result, SubjectPurge};

/// One notification event per affected source with at least one enabled
/// Webhooks destination, one pending delivery per destination. The
/// destinations of [`PERSONAS_SOURCE`] are those connected to a live
/// computed trait or audience.
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
    let mut by_source: HashMap<&str, Vec<String>> = HashMap::new();
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
        by_source.insert(source, ids);
    }
    for source in &subject.affected_sources {
        let destinations = by_source.get(source.as_str()).cloned().unwrap_or_default();
        if destinations.is_empty() {
            continue;
        }
        let (message_id, body) = delete_notification(regulation_id, source, subject, now);
        let seq = c
            .prepare_cached(
                "INSERT INTO events (source_id, message_id, event_type, received_at, body)
                 VALUES (?1, ?2, 'delete', ?3, ?4)",
            )?
            .insert(params![PRIVACY_SOURCE, message_id, ms(now), body])?;
        for destination in destinations {
            let delivery = c
                .prepare_cached(
                    "INSERT INTO deliveries (event_seq, destination_id, source_id, state,
                                             attempts, next_attempt_at, updated_at)
                     VALUES (?1, ?2, ?3, 'pending', 0, ?4, ?4)",
                )?
                .insert(params![seq, destination, source, ms(now)])?;
            c.prepare_cached(
                "INSERT INTO regulation_notifications
                   (regulation_id, subject_id, source_id, destination_id, delivery_id)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .execute(params![regulation_id, name, source, destination, delivery])?;
        }
    }
    Ok(())
}
