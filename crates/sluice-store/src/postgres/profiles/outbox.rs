//! The identify messages of an engine step: events of
//! [`PERSONAS_SOURCE`] with one pending delivery per destination that
//! receives, and their send counters (see `sqlite/profiles/engine.rs`).

use std::collections::{BTreeMap, HashMap, HashSet};

use deadpool_postgres::GenericClient;

use super::super::rows::{backend, get, ms};
use crate::{EmittedMessage, PERSONAS_SOURCE, ProfileCommit, Result};

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
    // The messages to write, with the destinations of each that receive.
    let mut chosen: Vec<(&EmittedMessage, Vec<&str>)> = Vec::new();
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
        } else {
            chosen.push((m, targets));
        }
    }
    if chosen.is_empty() {
        return Ok((seqs, silent));
    }
    // One statement for the events (a message of a computation deleted
    // meanwhile is not written), one for their deliveries.
    let ids: Vec<&str> = chosen.iter().map(|(m, _)| m.message_id.as_str()).collect();
    let due: Vec<i64> = chosen
        .iter()
        .map(|(m, _)| m.deliver_at.map_or(now, ms))
        .collect();
    let bodies: Vec<&str> = chosen.iter().map(|(m, _)| m.body.as_str()).collect();
    let computations: Vec<&str> = chosen
        .iter()
        .map(|(m, _)| m.computation_id.as_str())
        .collect();
    let named = super::scheduled::distinct(&computations);
    let sql = format!(
        "INSERT INTO events (source_id, message_id, event_type, received_at, body)
         SELECT $1, k.m, 'identify', k.due, k.b
         FROM unnest($2::text[], $3::bigint[], $4::text[], $5::text[])
              WITH ORDINALITY AS k(m, due, b, c, n)
         WHERE {}
         ORDER BY k.n
         RETURNING message_id, seq",
        super::scheduled::live("k.c", 6)
    );
    let written: HashMap<String, i64> = tx
        .query(
            &sql,
            &[&PERSONAS_SOURCE, &ids, &due, &bodies, &computations, &named],
        )
        .await
        .map_err(backend)?
        .iter()
        .map(|r| Ok((get(r, 0)?, get(r, 1)?)))
        .collect::<Result<_>>()?;
    // Counters are added up here and written once per key, not per message.
    let mut sends: BTreeMap<(&str, &str), i64> = BTreeMap::new();
    let (mut event_seqs, mut destinations, mut due_at) = (Vec::new(), Vec::new(), Vec::new());
    for (m, targets) in &chosen {
        let Some(&seq) = written.get(&m.message_id) else {
            continue;
        };
        if m.deliver_at.is_some() {
            seqs.insert(m.message_id.as_str(), seq);
        }
        for d in targets {
            event_seqs.push(seq);
            destinations.push(*d);
            due_at.push(m.deliver_at.map_or(now, ms));
            *sends.entry((m.computation_id.as_str(), *d)).or_default() += 1;
        }
    }
    if !event_seqs.is_empty() {
        tx.execute(
            "INSERT INTO deliveries (event_seq, destination_id, source_id, state, attempts,
                                     next_attempt_at, updated_at)
             SELECT k.s, k.d, $4, 'pending', 0, k.due, $5
             FROM unnest($1::bigint[], $2::text[], $3::bigint[]) AS k(s, d, due)",
            &[&event_seqs, &destinations, &due_at, &PERSONAS_SOURCE, &now],
        )
        .await
        .map_err(backend)?;
    }
    let mut per_computation: BTreeMap<&str, i64> = BTreeMap::new();
    let (mut keys_c, mut keys_d, mut counts) = (Vec::new(), Vec::new(), Vec::new());
    for ((computation, destination), n) in sends {
        keys_c.push(computation);
        keys_d.push(destination);
        counts.push(n);
        *per_computation.entry(computation).or_default() += n;
    }
    if !counts.is_empty() {
        tx.execute(
            "INSERT INTO computation_sends AS s (computation_id, destination_id, sent)
             SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[])
             ON CONFLICT (computation_id, destination_id) DO UPDATE SET sent = s.sent + excluded.sent",
            &[&keys_c, &keys_d, &counts],
        )
        .await
        .map_err(backend)?;
        let (ids, ns): (Vec<&str>, Vec<i64>) = per_computation.into_iter().unzip();
        tx.execute(
            "UPDATE computations m SET messages_sent = m.messages_sent + k.n
             FROM unnest($1::text[], $2::bigint[]) AS k(id, n) WHERE m.id = k.id",
            &[&ids, &ns],
        )
        .await
        .map_err(backend)?;
    }
    Ok((seqs, silent))
}
