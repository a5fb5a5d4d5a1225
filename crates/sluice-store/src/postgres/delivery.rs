//! The delivery workers' side: leasing due work and recording attempts.
//!
//! Several nodes run workers against one database. `claim_due` locks the
//! rows it leases with `FOR UPDATE SKIP LOCKED`: two nodes claiming at the
//! same instant each skip the rows the other is leasing, so a delivery is
//! never handed to two workers; once committed, `lease_until` keeps it from
//! everyone until the lease ends or a report releases it.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use chrono::{DateTime, Utc};
use deadpool_postgres::{Client, Transaction};

use super::rowless::{Held, Rowless};
use super::rows::{backend, big, get, ms, opt_time, time, unsigned};
use crate::records::last_error;
use crate::settled;
use crate::{Attempt, AttemptReport, DueDelivery, Outcome, Result};

/// Leases up to `limit` due deliveries, oldest due first, in one statement.
/// The CTE is `MATERIALIZED` so the locking subquery runs exactly once.
///
/// The scan steps over the deliveries in flight, still pending at the head
/// of `deliveries_due` (a thousand and more while a backlog drains). Moving
/// a leased row's `next_attempt_at` to its lease's end would take them out
/// of its way, but costs each claim new index entries instead of a
/// heap-only update: measured slower (`--backend postgres --only
/// end-to-end`, alternating, two runs each: database CPU per delivered
/// event 70–77 µs against 64–66, backlog drain 18,800–20,800 webhooks/s
/// against 21,800–22,700).
pub(super) async fn claim_due(
    client: &Client,
    node: &str,
    now: DateTime<Utc>,
    limit: u32,
    lease: Duration,
) -> Result<Vec<DueDelivery>> {
    let now_ms = ms(now);
    let lease_until = now_ms.saturating_add(big(lease.as_millis()));
    let stmt = client
        .prepare_cached(
            "WITH due AS MATERIALIZED (
                 SELECT id FROM deliveries
                 WHERE state = 'pending' AND next_attempt_at <= $1
                   AND (lease_until IS NULL OR lease_until <= $1)
                 ORDER BY next_attempt_at, id
                 LIMIT $2
                 FOR UPDATE SKIP LOCKED
             )
             UPDATE deliveries d SET lease_until = $3, lease_owner = $4
             FROM due, events e
             WHERE d.id = due.id AND e.seq = d.event_seq
             RETURNING d.id, d.destination_id, d.event_seq, e.message_id,
                       COALESCE(d.body, e.body), d.attempts,
                       d.first_attempt_at, d.next_attempt_at, e.received_at",
        )
        .await
        .map_err(backend)?;
    let rows = client
        .query(&stmt, &[&now_ms, &i64::from(limit), &lease_until, &node])
        .await
        .map_err(backend)?;
    let mut due = rows
        .iter()
        .map(|row| {
            let next: i64 = get(row, 7)?;
            let delivery = DueDelivery {
                delivery_id: get(row, 0)?,
                destination_id: get(row, 1)?,
                event_seq: get(row, 2)?,
                message_id: get(row, 3)?,
                event_body: get(row, 4)?,
                attempts: unsigned(row, 5)?,
                first_attempt_at: opt_time(row, 6)?,
                received_at: time(row, 8)?,
            };
            Ok((next, delivery))
        })
        .collect::<Result<Vec<_>>>()?;
    // RETURNING has no defined order; hand work out oldest due first.
    due.sort_by_key(|(next, d)| (*next, d.delivery_id));
    Ok(due.into_iter().map(|(_, d)| d).collect())
}

/// When the earliest pending delivery may be claimed: the minimum over
/// pending rows of `max(next_attempt_at, lease_until)`. Split in two so both
/// halves walk `deliveries_due` in order and stop early: the first unleased
/// (or lease-expired-before-due) row, and the lease ends of the leased rows
/// due before it, which are only the in-flight ones.
pub(super) async fn next_due(client: &Client) -> Result<Option<DateTime<Utc>>> {
    let stmt = client
        .prepare_cached(
            "WITH free AS (
                 SELECT min(next_attempt_at) AS t FROM deliveries
                 WHERE state = 'pending' AND next_attempt_at IS NOT NULL
                   AND (lease_until IS NULL OR lease_until <= next_attempt_at)
             )
             SELECT LEAST(
                 (SELECT t FROM free),
                 (SELECT min(d.lease_until) FROM deliveries d, free
                  WHERE d.state = 'pending' AND d.lease_until > d.next_attempt_at
                    AND (free.t IS NULL OR d.next_attempt_at < free.t)))",
        )
        .await
        .map_err(backend)?;
    let row = client.query_one(&stmt, &[]).await.map_err(backend)?;
    opt_time(&row, 0)
}

/// One report's effect on its delivery, as bound arrays' elements.
struct Effect {
    id: i64,
    at: i64,
    /// Attempt rounds to count: 1, or 0 for a hand-back without attempts.
    rounds: i64,
    state: &'static str,
    next_attempt_at: Option<i64>,
    error: Option<String>,
    /// The attempts, when they may settle the delivery in its row.
    settled: Option<String>,
}

/// Effects as the arrays a statement binds, one element per report.
struct Bound<'a> {
    ids: Vec<i64>,
    ats: Vec<i64>,
    rounds: Vec<i64>,
    states: Vec<&'static str>,
    nexts: Vec<Option<i64>>,
    errors: Vec<Option<&'a str>>,
    logs: Vec<Option<&'a str>>,
}

impl<'a> Bound<'a> {
    fn of(effects: &'a [Effect]) -> Bound<'a> {
        Bound {
            ids: effects.iter().map(|e| e.id).collect(),
            ats: effects.iter().map(|e| e.at).collect(),
            rounds: effects.iter().map(|e| e.rounds).collect(),
            states: effects.iter().map(|e| e.state).collect(),
            nexts: effects.iter().map(|e| e.next_attempt_at).collect(),
            errors: effects.iter().map(|e| e.error.as_deref()).collect(),
            logs: effects.iter().map(|e| e.settled.as_deref()).collect(),
        }
    }
}

fn effect(r: &AttemptReport) -> Effect {
    let (state, next_attempt_at, error) = match &r.outcome {
        Outcome::Succeeded => ("succeeded", None, None),
        Outcome::Retry { at } => ("pending", Some(ms(*at)), last_error(&r.attempts)),
        Outcome::Dead { error } => ("dead", None, Some(error.clone())),
        Outcome::Discarded { reason } => ("discarded", None, Some(reason.clone())),
    };
    Effect {
        id: r.delivery_id,
        at: ms(r.at),
        rounds: i64::from(!r.attempts.is_empty()),
        state,
        next_attempt_at,
        error,
        settled: settled::settled_log(r),
    }
}

/// Records each report of `node` in one transaction: one more attempt round
/// (none for a report without attempts, which only hands the delivery back),
/// the lease released unless another node holds it now (`node` was taken for
/// gone and its delivery claimed again; the report of what `node` did still
/// counts, but the new holder's lease stays, so no third node sends it
/// meanwhile), the outcome, the attempts: in the delivery's row when they are
/// its first round and settle it (`crate::settled`), else in `attempts`. A
/// report for a delivery no longer pending (discarded while in flight) keeps
/// its attempts but does not change the state; a report for an unknown
/// (pruned) delivery is ignored.
///
/// Reports for distinct deliveries go in one multi-row `UPDATE ... FROM
/// UNNEST`; a batch naming a delivery twice is applied one report at a time
/// (a join would apply only one of the duplicates).
///
/// A report for a delivery handed without a row (`rowless`) inserts the
/// row in the state the report gives ([`settle_rowless`]); one whose row
/// is there already (restored meanwhile) is applied as above.
pub(super) async fn report(
    client: &mut Client,
    node: &str,
    reports: &[AttemptReport],
    rowless: &Rowless,
) -> Result<()> {
    if reports.is_empty() {
        return Ok(());
    }
    let mut held = rowless.held(reports.iter().map(|r| r.delivery_id));
    let handed: Vec<i64> = held.keys().copied().collect();
    let tx = client.transaction().await.map_err(backend)?;
    let mut seen = HashSet::new();
    if reports.iter().all(|r| seen.insert(r.delivery_id)) {
        apply_held(&tx, node, reports, &mut held).await?;
    } else {
        for r in reports {
            apply_held(&tx, node, std::slice::from_ref(r), &mut held).await?;
        }
    }
    tx.commit().await.map_err(backend)?;
    rowless.written(handed);
    Ok(())
}

/// [`apply`], with the rows of the `held` deliveries inserted instead;
/// those inserted leave `held`.
async fn apply_held(
    tx: &Transaction<'_>,
    node: &str,
    reports: &[AttemptReport],
    held: &mut HashMap<i64, Held>,
) -> Result<()> {
    if !reports.iter().any(|r| held.contains_key(&r.delivery_id)) {
        return apply(tx, Some(node), reports).await;
    }
    let (first, rest): (Vec<&AttemptReport>, Vec<&AttemptReport>) = reports
        .iter()
        .partition(|r| held.contains_key(&r.delivery_id));
    let inserted = settle_rowless(tx, &first, held).await?;
    for id in &inserted {
        held.remove(id);
    }
    let others: Vec<AttemptReport> = (rest.into_iter().chain(first))
        .filter(|r| !inserted.contains(&r.delivery_id))
        .cloned()
        .collect();
    if others.is_empty() {
        return Ok(());
    }
    apply(tx, Some(node), &others).await
}

/// Inserts the rows of `reports`' deliveries, handed without a row (their
/// event seq and destination in `held`), in the state each report gives:
/// what [`apply`] would make of a pending row never attempted. Returns the
/// ids inserted: not those whose row is there already, nor those whose
/// event is gone (purged).
async fn settle_rowless(
    tx: &Transaction<'_>,
    reports: &[&AttemptReport],
    held: &HashMap<i64, Held>,
) -> Result<HashSet<i64>> {
    let effects: Vec<Effect> = reports.iter().map(|r| effect(r)).collect();
    let Bound {
        ids,
        ats,
        rounds,
        states,
        nexts,
        errors,
        logs,
    } = Bound::of(&effects);
    let (mut seqs, mut dests) = (Vec::with_capacity(ids.len()), Vec::with_capacity(ids.len()));
    for id in &ids {
        let h = held
            .get(id)
            .ok_or_else(|| crate::StoreError::internal("a rowless report without its delivery"))?;
        seqs.push(h.seq);
        dests.push(h.destination.as_str());
    }
    let stmt = tx
        .prepare_cached(
            "INSERT INTO deliveries (id, event_seq, destination_id, source_id, state, attempts,
                                     next_attempt_at, first_attempt_at, last_error, updated_at,
                                     settled_attempts)
             SELECT u.id, e.seq, u.dest, e.source_id, u.state, u.rounds, u.next,
                    CASE WHEN u.rounds > 0 THEN u.at END, u.err, u.at, u.log
             FROM UNNEST($1::bigint[], $2::bigint[], $3::text[], $4::bigint[], $5::text[],
                         $6::bigint[], $7::text[], $8::bigint[], $9::text[])
                  AS u(id, at, state, next, err, rounds, log, seq, dest)
             JOIN events e ON e.seq = u.seq
             ON CONFLICT (id) DO NOTHING
             RETURNING id",
        )
        .await
        .map_err(backend)?;
    let rows = tx
        .query(
            &stmt,
            &[
                &ids, &ats, &states, &nexts, &errors, &rounds, &logs, &seqs, &dests,
            ],
        )
        .await
        .map_err(backend)?;
    let inserted = rows
        .iter()
        .map(|r| get::<i64>(r, 0))
        .collect::<Result<HashSet<i64>>>()?;
    // Attempts not kept in the row go to `attempts`, as `apply` does.
    let (delivery_ids, attempts): (Vec<i64>, Vec<&Attempt>) = (reports.iter())
        .zip(&logs)
        .filter(|(r, log)| log.is_none() && inserted.contains(&r.delivery_id))
        .flat_map(|(r, _)| r.attempts.iter().map(move |a| (r.delivery_id, a)))
        .unzip();
    insert_attempts(tx, &delivery_ids, &attempts).await?;
    Ok(inserted)
}

/// Applies `reports` of `node` (see [`report`]); `None` for rows this
/// transaction wrote, which nobody holds.
pub(super) async fn apply(
    tx: &Transaction<'_>,
    node: Option<&str>,
    reports: &[AttemptReport],
) -> Result<()> {
    let effects: Vec<Effect> = reports.iter().map(effect).collect();
    let Bound {
        ids,
        ats,
        rounds,
        states,
        nexts,
        errors,
        logs,
    } = Bound::of(&effects);
    // The SET expressions read the row as it was: a round is kept in the
    // row when the delivery was pending with no attempt before it. RETURNING
    // reads the row as written; its second column is true exactly then.
    let stmt = tx
        .prepare_cached(
            "UPDATE deliveries d SET
                 attempts = d.attempts + u.rounds,
                 lease_until = CASE WHEN d.lease_owner IS DISTINCT FROM $8::text
                                         AND d.lease_until > u.at
                                    THEN d.lease_until END,
                 first_attempt_at = CASE WHEN u.rounds > 0
                                         THEN COALESCE(d.first_attempt_at, u.at)
                                         ELSE d.first_attempt_at END,
                 updated_at = u.at,
                 state = CASE WHEN d.state = 'pending' THEN u.state ELSE d.state END,
                 next_attempt_at = CASE WHEN d.state = 'pending' THEN u.next
                                        ELSE d.next_attempt_at END,
                 last_error = CASE WHEN d.state = 'pending' THEN COALESCE(u.err, d.last_error)
                                   ELSE d.last_error END,
                 settled_attempts = CASE WHEN d.state = 'pending' AND d.attempts = 0
                                         THEN u.log ELSE d.settled_attempts END
             FROM UNNEST($1::bigint[], $2::bigint[], $3::text[], $4::bigint[], $5::text[],
                         $6::bigint[], $7::text[])
                  AS u(id, at, state, next, err, rounds, log)
             WHERE d.id = u.id
             RETURNING d.id, u.log IS NOT NULL AND d.attempts = u.rounds
                             AND d.settled_attempts IS NOT NULL",
        )
        .await
        .map_err(backend)?;
    let rows = tx
        .query(
            &stmt,
            &[&ids, &ats, &states, &nexts, &errors, &rounds, &logs, &node],
        )
        .await
        .map_err(backend)?;
    let mut to_table = HashSet::with_capacity(rows.len());
    for row in &rows {
        if !get::<bool>(row, 1)? {
            to_table.insert(get::<i64>(row, 0)?);
        }
    }
    let (delivery_ids, attempts): (Vec<i64>, Vec<&Attempt>) = reports
        .iter()
        .filter(|r| to_table.contains(&r.delivery_id))
        .flat_map(|r| r.attempts.iter().map(move |a| (r.delivery_id, a)))
        .unzip();
    insert_attempts(tx, &delivery_ids, &attempts).await
}

/// One multi-row insert; rows leave `UNNEST` in array order, so attempt ids
/// (the listing order) follow the order of the report.
async fn insert_attempts(
    tx: &Transaction<'_>,
    delivery_ids: &[i64],
    attempts: &[&Attempt],
) -> Result<()> {
    if attempts.is_empty() {
        return Ok(());
    }
    let numbers: Vec<i64> = attempts.iter().map(|a| i64::from(a.attempt)).collect();
    let ats: Vec<i64> = attempts.iter().map(|a| ms(a.at)).collect();
    let urls: Vec<&str> = attempts.iter().map(|a| a.url.as_str()).collect();
    let statuses: Vec<Option<i32>> = attempts.iter().map(|a| a.status.map(i32::from)).collect();
    let errors: Vec<Option<&str>> = attempts.iter().map(|a| a.error.as_deref()).collect();
    let latencies: Vec<i64> = attempts.iter().map(|a| big(a.latency_ms)).collect();
    let responses: Vec<Option<&str>> = attempts.iter().map(|a| a.response.as_deref()).collect();
    let stmt = tx
        .prepare_cached(
            "INSERT INTO attempts (delivery_id, attempt, at, url, status, error, latency_ms,
                                   response)
             SELECT * FROM UNNEST($1::bigint[], $2::bigint[], $3::bigint[], $4::text[],
                                  $5::integer[], $6::text[], $7::bigint[], $8::text[])",
        )
        .await
        .map_err(backend)?;
    tx.execute(
        &stmt,
        &[
            &delivery_ids,
            &numbers,
            &ats,
            &urls,
            &statuses,
            &errors,
            &latencies,
            &responses,
        ],
    )
    .await
    .map_err(backend)?;
    Ok(())
}
