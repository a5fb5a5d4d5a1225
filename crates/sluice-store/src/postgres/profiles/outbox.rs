//! The identify messages of an engine step: events of
//! [`PERSONAS_SOURCE`] with one pending delivery per destination that
//! receives, and their send counters (see `sqlite/profiles/engine.rs`).

use std::collections::{BTreeMap, HashMap, HashSet};

use deadpool_postgres::GenericClient;

use super::super::rows::{backend, get, ms};
use crate::{PERSONAS_SOURCE, ProfileCommit, Result};

/// Writes the step's messages, except `stale` ones (prepared from a
/// definition edited since). Returns the event seqs of the scheduled
/// messages written, and the ids of the messages left unwritten because no
/// destination of theirs receives (their scheduled changes are written
/// without a message).
///
/// A destination receives while it exists and is enabled: a disabled one
/// is neither sent nor counted what it would discard, and enabling it
/// again gives it a first sync of its own (`queries::computations::resync_destination`).
/// The computations are locked by the step, and enabling locks them too,
/// so an enable either commits before the step reads the flags or waits
/// for the step and then queues a backfill that reads its values.
pub(super) async fn write<'c>(
    tx: &impl GenericClient,
    c: &'c ProfileCommit,
    stale: &HashSet<&str>,
) -> Result<(HashMap<&'c str, i64>, HashSet<&'c str>)> {
    let now = ms(c.now);
    let mut seqs = HashMap::new();
    let mut silent = HashSet::new();
    let wanted: Vec<&str> = c
        .messages
        .iter()
        .flat_map(|m| m.destination_ids.iter().map(String::as_str))
        .collect::<HashSet<_>>()
        .into_iter()
        .collect();
    let receiving: HashSet<String> = if wanted.is_empty() {
        HashSet::new()
    } else {
        tx.query(
            "SELECT id FROM destinations WHERE id = ANY($1) AND enabled",
            &[&wanted],
        )
        .await
        .map_err(backend)?
        .iter()
        .map(|r| get(r, 0))
        .collect::<Result<_>>()?
    };
    // Counters are added up here and written once per key, not per message.
    let mut sends: BTreeMap<(&str, &str), i64> = BTreeMap::new();
    for m in &c.messages {
        if m.destination_ids.is_empty() || stale.contains(m.message_id.as_str()) {
            continue;
        }
        let targets: Vec<&str> = m
            .destination_ids
            .iter()
            .map(String::as_str)
            .filter(|d| receiving.contains(*d))
            .collect();
        if targets.is_empty() {
            silent.insert(m.message_id.as_str());
            continue;
        }
        let due = m.deliver_at.map_or(now, ms);
        let row = tx
            .query_opt(
                "INSERT INTO events (source_id, message_id, event_type, received_at, body)
                 SELECT $1, $2, 'identify', $3, $4 WHERE EXISTS
                   (SELECT 1 FROM computations WHERE id = $5 AND deleted_at IS NULL)
                 RETURNING seq",
                &[
                    &PERSONAS_SOURCE,
                    &m.message_id,
                    &due,
                    &m.body,
                    &m.computation_id,
                ],
            )
            .await
            .map_err(backend)?;
        let Some(row) = row else { continue };
        let seq: i64 = get(&row, 0)?;
        if m.deliver_at.is_some() {
            seqs.insert(m.message_id.as_str(), seq);
        }
        tx.execute(
            "INSERT INTO deliveries (event_seq, destination_id, source_id, state, attempts,
                                     next_attempt_at, updated_at)
             SELECT $1, d, $3, 'pending', 0, $4, $5 FROM UNNEST($2::text[]) AS d",
            &[&seq, &targets, &PERSONAS_SOURCE, &due, &now],
        )
        .await
        .map_err(backend)?;
        for d in targets {
            *sends.entry((m.computation_id.as_str(), d)).or_default() += 1;
        }
    }
    let mut per_computation: BTreeMap<&str, i64> = BTreeMap::new();
    for ((computation, destination), n) in sends {
        tx.execute(
            "INSERT INTO computation_sends AS s (computation_id, destination_id, sent)
             VALUES ($1, $2, $3)
             ON CONFLICT (computation_id, destination_id) DO UPDATE SET sent = s.sent + $3",
            &[&computation, &destination, &n],
        )
        .await
        .map_err(backend)?;
        *per_computation.entry(computation).or_default() += n;
    }
    for (computation, n) in per_computation {
        tx.execute(
            "UPDATE computations SET messages_sent = messages_sent + $2 WHERE id = $1",
            &[&computation, &n],
        )
        .await
        .map_err(backend)?;
    }
    Ok((seqs, silent))
}
