//! `profile_scheduled`: window changes prepared ahead of their time
//! (version 8), as `sqlite/profiles/scheduled.rs` (see [`crate::profiles`]).
//!
//! A row is (profile, computation) → the value from `at` on and the event
//! seq of its message, whose deliveries are due at `at`. Withdrawing a row
//! deletes its deliveries that no worker has taken, then the message
//! itself; a taken one either fails the engine's step (it is redone once
//! the change is due) or, for an administrative change, is left to go out.
//!
//! Unlike SQLite's, writers here run at once:
//! - A delivery is untaken while pending, unattempted and unleased
//!   (`claim_due` stamps `lease_until`). The withdrawing `DELETE` waits for
//!   a claim in flight and re-checks the row, so a delivery is withdrawn or
//!   claimed, never both; counters follow the rows it returns.
//! - Writers lock the computation rows they rely on first, in id order
//!   ([`lock`]; an edit holds its row `FOR UPDATE` from its first
//!   statement): a step never writes a change prepared from a definition
//!   being edited, and a step and an edit never deadlock.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use deadpool_postgres::GenericClient;

use super::super::rows::{backend, get, ms, time};
use crate::{ProfileCommit, Result, Schedule, ScheduledChange, StoreError};

pub(in crate::postgres) const SCHEMA_V8: &str = r#"
CREATE TABLE profile_scheduled (
    profile_id     text COLLATE "C" NOT NULL,
    computation_id text COLLATE "C" NOT NULL,
    at             bigint NOT NULL,
    value          text,
    event_seq      bigint,
    PRIMARY KEY (profile_id, computation_id)
);
CREATE INDEX profile_scheduled_at ON profile_scheduled (at);
CREATE INDEX profile_scheduled_computation ON profile_scheduled (computation_id);
"#;

/// The scheduled changes of the given profiles.
pub(super) async fn of(c: &impl GenericClient, ids: &[String]) -> Result<Vec<ScheduledChange>> {
    let rows = c
        .query(
            "SELECT computation_id, profile_id, at, value FROM profile_scheduled
             WHERE profile_id = ANY($1) ORDER BY profile_id, computation_id",
            &[&ids],
        )
        .await
        .map_err(backend)?;
    rows.iter()
        .map(|r| {
            Ok(ScheduledChange {
                computation_id: get(r, 0)?,
                profile_id: get(r, 1)?,
                at: time(r, 2)?,
                value: get(r, 3)?,
            })
        })
        .collect()
}

/// Profiles due after `now` and by `until`, without scheduled changes.
pub(super) async fn due_ahead(
    c: &impl GenericClient,
    now: DateTime<Utc>,
    until: DateTime<Utc>,
    limit: u32,
    partitions: &[u16],
) -> Result<Vec<(String, DateTime<Utc>)>> {
    let rows = c
        .query(
            "SELECT id, next_change_at FROM profiles p
             WHERE next_change_at > $1 AND next_change_at <= $2
               AND NOT EXISTS (SELECT 1 FROM profile_scheduled s WHERE s.profile_id = p.id)
               AND (cardinality($4::smallint[]) = 0
                    OR ((hashtext(id) & 2147483647) % $5)::smallint = ANY($4))
             ORDER BY next_change_at, id LIMIT $3",
            &[
                &ms(now),
                &ms(until),
                &i64::from(limit),
                &super::engine::small(partitions),
                &super::engine::n_partitions(),
            ],
        )
        .await
        .map_err(backend)?;
    rows.iter().map(|r| Ok((get(r, 0)?, time(r, 1)?))).collect()
}

/// Locks, in id order, the computations `ids` and those of the scheduled
/// changes of `profiles`, before the caller writes anything else.
pub(super) async fn lock(c: &impl GenericClient, profiles: &[&str], ids: &[&str]) -> Result<()> {
    if profiles.is_empty() && ids.is_empty() {
        return Ok(());
    }
    // One index scan of the keys named: an `OR` of the two lists made the
    // planner scan the whole table, every one of 10,000 definitions, on
    // every step. Rows are locked after the sort, so in id order.
    c.query(
        "SELECT id FROM computations
         WHERE id = ANY($2::text[] || ARRAY(
             SELECT computation_id FROM profile_scheduled WHERE profile_id = ANY($1)))
         ORDER BY id FOR NO KEY UPDATE",
        &[&profiles, &ids],
    )
    .await
    .map_err(backend)?;
    Ok(())
}

/// The condition that computation `column` is live (not deleted), where
/// parameter `$n` lists the computations named, each once ([`distinct`]).
/// They are read once each through their keys: an `EXISTS` per row was
/// planned as a hash join over every definition, a scan of 10,000 of them
/// on every engine step.
pub(super) fn live(column: &str, n: usize) -> String {
    format!(
        "{column} = ANY(ARRAY(
             SELECT id FROM computations WHERE id = ANY(${n}) AND deleted_at IS NULL))"
    )
}

/// Each of `ids` once.
pub(super) fn distinct<'a>(ids: &[&'a str]) -> Vec<&'a str> {
    let set: HashSet<&str> = ids.iter().copied().collect();
    set.into_iter().collect()
}

/// Writes values the way a step does: `None` deletes one; a deleted
/// computation gets none. Keys are (computation, profile), each once.
/// `fresh` names profiles this transaction inserted: none of their values
/// can be stored yet, so theirs are plain inserts, without the conflict
/// check of an upsert (most of a new person's cost in a step).
pub(super) async fn apply(
    c: &impl GenericClient,
    changes: &[(String, String, Option<String>)],
    fresh: &HashSet<&str>,
) -> Result<()> {
    let (mut new, mut set, mut gone) = (Vec::new(), Vec::new(), Vec::new());
    for (computation, profile, value) in changes {
        let key = (computation.as_str(), profile.as_str());
        match value {
            None => gone.push(key),
            Some(v) if fresh.contains(profile.as_str()) => new.push((key, v.as_str())),
            Some(v) => set.push((key, v.as_str())),
        }
    }
    for (rows, upsert) in [(new, false), (set, true)] {
        if rows.is_empty() {
            continue;
        }
        let computations: Vec<&str> = rows.iter().map(|r| r.0.0).collect();
        let profiles: Vec<&str> = rows.iter().map(|r| r.0.1).collect();
        let values: Vec<&str> = rows.iter().map(|r| r.1).collect();
        let named = distinct(&computations);
        let conflict = if upsert {
            " ON CONFLICT (computation_id, profile_id) DO UPDATE SET value = excluded.value"
        } else {
            ""
        };
        let sql = format!(
            "INSERT INTO computed_values (computation_id, profile_id, value)
             SELECT k.c, k.p, k.v FROM unnest($1::text[], $2::text[], $3::text[]) AS k(c, p, v)
             WHERE {}{conflict}",
            live("k.c", 4)
        );
        c.execute(&sql, &[&computations, &profiles, &values, &named])
            .await
            .map_err(backend)?;
    }
    if !gone.is_empty() {
        let (computations, profiles): (Vec<&str>, Vec<&str>) = gone.into_iter().unzip();
        c.execute(
            "DELETE FROM computed_values v USING unnest($1::text[], $2::text[]) AS k(c, p)
             WHERE v.computation_id = k.c AND v.profile_id = k.p",
            &[&computations, &profiles],
        )
        .await
        .map_err(backend)?;
    }
    Ok(())
}

/// Withdraws the messages (computation, event seq) of scheduled changes:
/// their untaken deliveries with their send counts, then the events left
/// without deliveries. With `strict`, a delivery already taken by a worker
/// fails the call (the caller's transaction is then rolled back).
async fn withdraw(c: &impl GenericClient, messages: &[(String, i64)], strict: bool) -> Result<()> {
    if messages.is_empty() {
        return Ok(());
    }
    let (computations, seqs): (Vec<&str>, Vec<i64>) =
        messages.iter().map(|(c, s)| (c.as_str(), *s)).unzip();
    c.execute(
        "WITH gone AS (
             DELETE FROM deliveries d USING unnest($1::text[], $2::bigint[]) AS k(c, seq)
             WHERE d.event_seq = k.seq AND d.state = 'pending' AND d.attempts = 0
               AND d.lease_until IS NULL
             RETURNING k.c, d.destination_id
         ), sends AS (
             UPDATE computation_sends s SET sent = s.sent - g.n
             FROM (SELECT c, destination_id, count(*) AS n FROM gone GROUP BY 1, 2) g
             WHERE s.computation_id = g.c AND s.destination_id = g.destination_id
         )
         UPDATE computations m SET messages_sent = m.messages_sent - g.n
         FROM (SELECT c, count(*) AS n FROM gone GROUP BY 1) g WHERE m.id = g.c",
        &[&computations, &seqs],
    )
    .await
    .map_err(backend)?;
    if strict {
        let taken = c
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM deliveries WHERE event_seq = ANY($1))",
                &[&seqs],
            )
            .await
            .map_err(backend)?;
        if get::<bool>(&taken, 0)? {
            return Err(StoreError::Conflict(
                "a scheduled message was already taken for delivery".into(),
            ));
        }
    }
    c.execute(
        "DELETE FROM events e WHERE seq = ANY($1)
           AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_seq = e.seq)",
        &[&seqs],
    )
    .await
    .map_err(backend)?;
    Ok(())
}

/// Settles the given profiles' scheduled changes at `now` (a step touches
/// them): due ones are applied, later ones withdrawn, strictly. The
/// computations are locked by the step.
pub(super) async fn settle(c: &impl GenericClient, profiles: &[String], now: i64) -> Result<()> {
    if profiles.is_empty() {
        return Ok(());
    }
    let rows = c
        .query(
            "DELETE FROM profile_scheduled WHERE profile_id = ANY($1)
             RETURNING computation_id, profile_id, at, value, event_seq",
            &[&profiles],
        )
        .await
        .map_err(backend)?;
    let (mut due, mut later) = (Vec::new(), Vec::new());
    for r in &rows {
        let at: i64 = get(r, 2)?;
        if at <= now {
            due.push((get(r, 0)?, get(r, 1)?, get(r, 3)?));
        } else if let Some(seq) = get::<Option<i64>>(r, 4)? {
            later.push((get(r, 0)?, seq));
        }
    }
    apply(c, &due, &HashSet::new()).await?;
    withdraw(c, &later, true).await
}

/// Whether any change is due by `now`.
pub(super) async fn any_due(c: &impl GenericClient, now: DateTime<Utc>) -> Result<bool> {
    get(
        &c.query_one(
            "SELECT EXISTS (SELECT 1 FROM profile_scheduled WHERE at <= $1)",
            &[&ms(now)],
        )
        .await
        .map_err(backend)?,
        0,
    )
}

/// Applies up to `limit` changes due by `now`; returns how many. Their
/// computations are locked first; rows an edit dropped meanwhile are gone
/// from the `DELETE`, so a cancelled change is never applied.
pub(super) async fn settle_due(
    c: &impl GenericClient,
    now: DateTime<Utc>,
    limit: u32,
) -> Result<u64> {
    let rows = c
        .query(
            "SELECT profile_id, computation_id FROM profile_scheduled
             WHERE at <= $1 ORDER BY at LIMIT $2",
            &[&ms(now), &i64::from(limit)],
        )
        .await
        .map_err(backend)?;
    let (profiles, computations): (Vec<&str>, Vec<&str>) = rows
        .iter()
        .map(|r| Ok((get(r, 0)?, get(r, 1)?)))
        .collect::<Result<Vec<(&str, &str)>>>()?
        .into_iter()
        .unzip();
    if profiles.is_empty() {
        return Ok(0);
    }
    lock(c, &[], &computations).await?;
    let taken = c
        .query(
            "DELETE FROM profile_scheduled s
             USING unnest($1::text[], $2::text[]) AS k(p, c)
             WHERE s.profile_id = k.p AND s.computation_id = k.c AND s.at <= $3
             RETURNING s.computation_id, s.profile_id, s.value",
            &[&profiles, &computations, &ms(now)],
        )
        .await
        .map_err(backend)?
        .iter()
        .map(|r| Ok((get(r, 0)?, get(r, 1)?, get(r, 2)?)))
        .collect::<Result<Vec<_>>>()?;
    apply(c, &taken, &HashSet::new()).await?;
    Ok(taken.len() as u64)
}

/// Drops a computation's scheduled changes with their untaken messages
/// (the definition changed or is gone); each profile is due again at the
/// change's time, to be evaluated afresh. The caller holds the
/// computation's row lock.
pub(crate) async fn cancel_computation(c: &impl GenericClient, computation: &str) -> Result<()> {
    let rows = c
        .query(
            "DELETE FROM profile_scheduled WHERE computation_id = $1
             RETURNING profile_id, at, event_seq",
            &[&computation],
        )
        .await
        .map_err(backend)?;
    let (mut messages, mut again) = (Vec::new(), Vec::new());
    for r in &rows {
        if let Some(seq) = get::<Option<i64>>(r, 2)? {
            messages.push((computation.to_owned(), seq));
        }
        again.push((get(r, 0)?, get(r, 1)?));
    }
    withdraw(c, &messages, false).await?;
    due_again(c, &again).await
}

/// Drops removed profiles' scheduled changes with their untaken messages.
pub(in crate::postgres) async fn remove_profiles(
    c: &impl GenericClient,
    ids: &[String],
) -> Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let profiles: Vec<&str> = ids.iter().map(String::as_str).collect();
    lock(c, &profiles, &[]).await?;
    let rows = c
        .query(
            "DELETE FROM profile_scheduled WHERE profile_id = ANY($1)
             RETURNING computation_id, event_seq",
            &[&ids],
        )
        .await
        .map_err(backend)?;
    let mut messages = Vec::new();
    for r in &rows {
        if let Some(seq) = get::<Option<i64>>(r, 1)? {
            messages.push((get(r, 0)?, seq));
        }
    }
    withdraw(c, &messages, false).await
}

/// Makes each profile due again by its time (the earliest, if several).
async fn due_again(c: &impl GenericClient, profiles: &[(String, i64)]) -> Result<()> {
    if profiles.is_empty() {
        return Ok(());
    }
    let (ids, ats): (Vec<&str>, Vec<i64>) =
        profiles.iter().map(|(p, at)| (p.as_str(), *at)).unzip();
    c.execute(
        "UPDATE profiles p SET next_change_at = k.at
         FROM (SELECT id, min(at) AS at FROM unnest($1::text[], $2::bigint[]) AS u(id, at)
               GROUP BY id) k
         WHERE p.id = k.id AND (p.next_change_at IS NULL OR p.next_change_at > k.at)",
        &[&ids, &ats],
    )
    .await
    .map_err(backend)?;
    Ok(())
}

/// Sorts out the step's changes: those prepared from the current
/// definition, and the message ids of the others (prepared from a
/// definition edited since, or deleted), which are not written; their
/// profiles are due again at the change's time. The computations are
/// locked by the step, so the answer holds until it commits.
pub(super) async fn fresh<'c>(
    c: &impl GenericClient,
    commit: &'c ProfileCommit,
) -> Result<(Vec<&'c Schedule>, HashSet<&'c str>)> {
    let (mut fresh, mut stale) = (Vec::new(), HashSet::new());
    if commit.scheduled.is_empty() {
        return Ok((fresh, stale));
    }
    let ids: Vec<&str> = commit
        .scheduled
        .iter()
        .map(|s| s.change.computation_id.as_str())
        .collect();
    let current = c
        .query(
            "SELECT id, updated_at FROM computations WHERE id = ANY($1) AND deleted_at IS NULL",
            &[&ids],
        )
        .await
        .map_err(backend)?
        .iter()
        .map(|r| Ok((get(r, 0)?, get(r, 1)?)))
        .collect::<Result<HashMap<String, i64>>>()?;
    let mut again = Vec::new();
    for s in &commit.scheduled {
        if current.get(&s.change.computation_id) == Some(&ms(s.computation_updated_at)) {
            fresh.push(s);
        } else {
            stale.extend(s.message_id.as_deref());
            again.push((s.change.profile_id.clone(), ms(s.change.at)));
        }
    }
    due_again(c, &again).await?;
    Ok((fresh, stale))
}

/// Writes fresh changes; one whose message was not written (its
/// computation is gone) is dropped. `seqs` maps the ids of the scheduled
/// messages written to their event seqs; a change whose message is
/// `silent` (no destination of it receives) is written without one.
pub(super) async fn insert(
    c: &impl GenericClient,
    fresh: &[&Schedule],
    seqs: &HashMap<&str, i64>,
    silent: &HashSet<&str>,
) -> Result<()> {
    let (mut profiles, mut computations, mut ats, mut values, mut events) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for s in fresh {
        let seq = s.message_id.as_deref().and_then(|m| seqs.get(m).copied());
        let unsent = s.message_id.as_deref().is_none_or(|m| silent.contains(m));
        if !unsent && seq.is_none() {
            continue;
        }
        profiles.push(s.change.profile_id.as_str());
        computations.push(s.change.computation_id.as_str());
        ats.push(ms(s.change.at));
        values.push(s.change.value.as_deref());
        events.push(seq);
    }
    if profiles.is_empty() {
        return Ok(());
    }
    // One row per key, the last one winning (as SQLite's INSERT OR REPLACE).
    c.execute(
        "INSERT INTO profile_scheduled (profile_id, computation_id, at, value, event_seq)
         SELECT DISTINCT ON (p, c) p, c, at, v, s
         FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::bigint[])
              WITH ORDINALITY AS k(p, c, at, v, s, n)
         ORDER BY p, c, n DESC
         ON CONFLICT (profile_id, computation_id) DO UPDATE
         SET at = excluded.at, value = excluded.value, event_seq = excluded.event_seq",
        &[&profiles, &computations, &ats, &values, &events],
    )
    .await
    .map_err(backend)?;
    Ok(())
}
