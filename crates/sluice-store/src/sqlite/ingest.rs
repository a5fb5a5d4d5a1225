//! The ingest outbox: events, their deliveries and usage in one transaction.

use std::sync::Arc;

use chrono::Utc;
use rusqlite::{Connection, params};

use super::dedup::{self, Window};
use super::message_ids;
use super::rows::{day, ms};

use crate::local::{LocalDelivery, Taken};
use crate::{AppendRequest, Appended, DueDelivery, NewEvent, Result};

/// The writer's measure of a request's size: its events.
pub(super) fn weight(request: &AppendRequest) -> usize {
    request.events.len().max(1)
}

/// Writes one request. A delivery's `source_id` is written as `''`: "the
/// event's source" (version 12; see `queries::deliveries::RECORD_COLUMNS`), 20 bytes
/// less per delivery. Runs inside the writer's group transaction, so the
/// events, deliveries and counters commit together or not at all. Hot path:
/// cached statements, no reads.
/// `stored` holds, per event, its compressed body or `None` for the text
/// (see `bodies`; computed by the caller, off the writer thread).
/// With a `window`, an event whose message id the source already committed
/// within it (or earlier in this group) is dropped and counted (`dedup`);
/// `keys` are the events' keys in it, hashed by the caller (see
/// [`dedup::Keyer`]).
/// With `local`, the first deliveries, as many as its engine has room for,
/// are written leased to it, except those for a destination it is too busy
/// to take from ingest; they are to be handed over once the group commits
/// ([`Taken::hand`]).
pub(super) fn append(
    conn: &Connection,
    request: &AppendRequest,
    stored: &[Option<Vec<u8>>],
    keys: &[u64],
    mut window: Option<&mut Window>,
    local: Option<&Arc<LocalDelivery>>,
) -> Result<(Appended, Taken)> {
    let received_at = ms(request.received_at);
    let mut insert_event = conn.prepare_cached(
        "INSERT INTO events (source_id, message_id, event_type, received_at, body, blocked)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?;
    let mut insert_delivery = conn.prepare_cached(
        "INSERT INTO deliveries (event_seq, destination_id, source_id, state, attempts,
                                 next_attempt_at, updated_at, body)
         VALUES (?1, ?2, '', 'pending', 0, ?3, ?5, ?4)",
    )?;
    let destinations =
        || (request.events.iter()).flat_map(|e| e.destination_ids.iter().map(String::as_str));
    let mut leased = match local {
        Some(local) => local.take(destinations()),
        None => Taken::none(),
    };
    // The rows after event `i` that may be leased: when event `i` is a
    // duplicate, the room taken beyond them goes back at once. Counted only
    // then, off the path of calls stored.
    let still_open = |leased: &Taken, i: usize| -> usize {
        (request.events.iter().skip(i + 1))
            .flat_map(|e| e.destination_ids.iter())
            .filter(|id| leased.open_for(id))
            .count()
    };
    let mut insert_leased = match leased.count() {
        0 => None,
        _ => Some(conn.prepare_cached(
            "INSERT INTO deliveries (event_seq, destination_id, source_id, state, attempts,
                                     next_attempt_at, updated_at, body, lease_until)
             VALUES (?1, ?2, '', 'pending', 0, ?3, ?3, ?4, ?5)",
        )?),
    };
    let lease_until = local.map_or(0, |local| {
        let lease = i64::try_from(local.lease().as_millis()).unwrap_or(i64::MAX);
        ms(Utc::now()).saturating_add(lease)
    });
    let mut rows = 0;
    let day = day(request.received_at);
    let mut first = None;
    let mut seq = 0;
    let mut outcome = Appended::default();
    if let Some(window) = window.as_deref_mut() {
        window.expire(received_at);
        window.prefetch(keys);
    }
    for (i, event) in request.events.iter().enumerate() {
        let key = match (window.as_deref(), keys.get(i)) {
            (Some(window), Some(&key)) => {
                if dedup::is_duplicate(conn, window, key, &request.source_id, &event.message_id)? {
                    outcome.duplicates += 1;
                    if leased.count() > 0 {
                        leased.keep_for(still_open(&leased, i));
                    }
                    continue;
                }
                Some(key)
            }
            _ => None,
        };
        let body: &dyn rusqlite::ToSql = match stored.get(i) {
            Some(Some(blob)) => blob,
            _ => &event.body,
        };
        seq = insert_event.insert(params![
            request.source_id,
            event.message_id,
            event.event_type,
            received_at,
            body,
            event.blocked.as_ref().map(|b| b.rule.as_str()),
        ])?;
        first.get_or_insert(seq);
        outcome.stored += 1;
        if let (Some(window), Some(key)) = (window.as_deref_mut(), key) {
            window.insert(key, received_at, seq);
        }
        for destination_id in &event.destination_ids {
            let body = event.own_body(destination_id);
            rows += 1;
            if let (Some(insert), true) = (insert_leased.as_mut(), leased.takes(destination_id)) {
                let id =
                    insert.insert(params![seq, destination_id, received_at, body, lease_until])?;
                leased.lease(DueDelivery::unattempted(
                    id,
                    seq,
                    destination_id.clone(),
                    event.message_id.clone(),
                    body.unwrap_or(&event.body).to_owned(),
                    request.received_at,
                ));
                continue;
            }
            insert_delivery.execute(params![
                seq,
                destination_id,
                received_at,
                body,
                received_at
            ])?;
        }
        if !event.filtered.is_empty() || event.blocked.is_some() {
            outcomes_at_ingest(conn, request, event, seq, &day)?;
        }
    }
    let events = i64::try_from(outcome.stored).unwrap_or(i64::MAX);
    let duplicates = i64::try_from(outcome.duplicates).unwrap_or(i64::MAX);
    conn.prepare_cached(
        "INSERT INTO usage (source_id, day, api_calls, events, duplicates)
         VALUES (?1, ?2, 1, ?3, ?4)
         ON CONFLICT (source_id, day)
         DO UPDATE SET api_calls = api_calls + 1, events = events + excluded.events,
                       duplicates = duplicates + excluded.duplicates",
    )?
    .execute(params![request.source_id, day, events, duplicates])?;
    if let Some(first) = first {
        message_ids::after_append(conn, first, seq)?;
    }
    outcome.handed = rows > 0 && leased.leased() == rows;
    Ok((outcome, leased))
}

/// What rules and filters decided at ingest: a `filtered` delivery per
/// destination whose filter dropped the event (the filter's name in
/// `last_error`), and a blocked call counted under its event name.
fn outcomes_at_ingest(
    conn: &Connection,
    request: &AppendRequest,
    event: &NewEvent,
    seq: i64,
    day: &str,
) -> Result<()> {
    let received_at = ms(request.received_at);
    let mut filtered = conn.prepare_cached(
        "INSERT INTO deliveries (event_seq, destination_id, source_id, state, attempts,
                                 last_error, updated_at)
         VALUES (?1, ?2, '', 'filtered', 0, ?3, ?4)",
    )?;
    for (destination_id, filter) in &event.filtered {
        filtered.execute(params![seq, destination_id, filter, received_at])?;
    }
    if let Some(blocked) = &event.blocked {
        conn.prepare_cached(
            "INSERT INTO usage_blocked (source_id, day, event, count) VALUES (?1, ?2, ?3, 1)
             ON CONFLICT (source_id, day, event) DO UPDATE SET count = count + 1",
        )?
        .execute(params![request.source_id, day, blocked.event])?;
    }
    Ok(())
}
