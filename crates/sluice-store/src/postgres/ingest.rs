//! The ingest outbox: events, their deliveries and usage, many requests per
//! transaction, a fixed handful of statements per group.

use std::collections::BTreeMap;

use deadpool_postgres::{Client, Pool};

use super::rows::{backend, big, day, get, ms, pool_error, sql_limit, time, unsigned};
use crate::{AppendRequest, Result, StoreError, StoredEvent, UsageDay};

/// Why a group failed, which decides whether retrying its requests one by
/// one is safe.
#[derive(Debug)]
pub(super) enum BatchError {
    /// Failed before `COMMIT` was sent: nothing was written; each request
    /// may be retried on its own.
    NotWritten(StoreError),
    /// `COMMIT` itself failed or its answer was lost: the group may or may
    /// not be stored, so it must not be written again.
    Unknown(StoreError),
}

/// The columns of one group, as arrays bound to `UNNEST`.
#[derive(Default)]
struct Columns {
    source_ids: Vec<String>,
    message_ids: Vec<String>,
    event_types: Vec<String>,
    received_ats: Vec<i64>,
    bodies: Vec<String>,
}

/// Commits `requests` in one transaction: reserve one seq per event (in
/// order, so a request's events keep their order), insert all events, all
/// deliveries, then the usage counters summed per (source, day). Statements
/// per group: 4, whatever the number of requests and events.
pub(super) async fn append_batch(
    pool: &Pool,
    requests: &[&AppendRequest],
) -> Result<(), BatchError> {
    let mut client = pool
        .get()
        .await
        .map_err(|e| BatchError::NotWritten(pool_error(e)))?;
    let tx = client
        .transaction()
        .await
        .map_err(|e| BatchError::NotWritten(backend(e)))?;
    write(&tx, requests).await.map_err(BatchError::NotWritten)?;
    tx.commit()
        .await
        .map_err(|e| BatchError::Unknown(backend(e)))
}

async fn write(tx: &deadpool_postgres::Transaction<'_>, requests: &[&AppendRequest]) -> Result<()> {
    let total: usize = requests.iter().map(|r| r.events.len()).sum();
    let seqs = reserve_seqs(tx, total).await?;
    let mut seq_iter = seqs.iter();
    let mut events = Columns::default();
    let (mut d_seqs, mut d_dests, mut d_sources, mut d_due) = (vec![], vec![], vec![], vec![]);
    // BTreeMap: one row per key (an upsert may not touch a row twice) and a
    // fixed lock order, so two nodes updating the same counters never deadlock.
    let mut usage: BTreeMap<(&str, String), (i64, i64)> = BTreeMap::new();
    for request in requests {
        let received_at = ms(request.received_at);
        for event in &request.events {
            let seq = *seq_iter
                .next()
                .ok_or_else(|| StoreError::Backend("fewer seqs reserved than events".into()))?;
            events.source_ids.push(request.source_id.clone());
            events.message_ids.push(event.message_id.clone());
            events.event_types.push(event.event_type.clone());
            events.received_ats.push(received_at);
            events.bodies.push(event.body.clone());
            for destination_id in &event.destination_ids {
                d_seqs.push(seq);
                d_dests.push(destination_id.as_str());
                d_sources.push(request.source_id.as_str());
                d_due.push(received_at);
            }
        }
        let counters = usage
            .entry((request.source_id.as_str(), day(request.received_at)))
            .or_default();
        counters.0 += 1;
        counters.1 += big(request.events.len());
    }
    if !seqs.is_empty() {
        let insert = tx
            .prepare_cached(
                "INSERT INTO events (seq, source_id, message_id, event_type, received_at, body)
                 SELECT * FROM UNNEST($1::bigint[], $2::text[], $3::text[], $4::text[],
                                      $5::bigint[], $6::text[])",
            )
            .await
            .map_err(backend)?;
        tx.execute(
            &insert,
            &[
                &seqs,
                &events.source_ids,
                &events.message_ids,
                &events.event_types,
                &events.received_ats,
                &events.bodies,
            ],
        )
        .await
        .map_err(backend)?;
    }
    if !d_seqs.is_empty() {
        // Rows come out of UNNEST in array order, so delivery ids follow
        // event order: `claim_due` breaks ties by id.
        let insert = tx
            .prepare_cached(
                "INSERT INTO deliveries (event_seq, destination_id, source_id, state, attempts,
                                         next_attempt_at, updated_at)
                 SELECT s, d, src, 'pending', 0, t, t
                 FROM UNNEST($1::bigint[], $2::text[], $3::text[], $4::bigint[]) AS u(s, d, src, t)",
            )
            .await
            .map_err(backend)?;
        tx.execute(&insert, &[&d_seqs, &d_dests, &d_sources, &d_due])
            .await
            .map_err(backend)?;
    }
    let mut u_sources = Vec::with_capacity(usage.len());
    let mut u_days = Vec::with_capacity(usage.len());
    let (mut u_calls, mut u_events) = (Vec::new(), Vec::new());
    for ((source_id, day), (calls, count)) in usage {
        u_sources.push(source_id);
        u_days.push(day);
        u_calls.push(calls);
        u_events.push(count);
    }
    let upsert = tx
        .prepare_cached(
            "INSERT INTO usage AS u (source_id, day, api_calls, events)
             SELECT * FROM UNNEST($1::text[], $2::text[], $3::bigint[], $4::bigint[])
             ON CONFLICT (source_id, day) DO UPDATE
             SET api_calls = u.api_calls + excluded.api_calls, events = u.events + excluded.events",
        )
        .await
        .map_err(backend)?;
    tx.execute(&upsert, &[&u_sources, &u_days, &u_calls, &u_events])
        .await
        .map_err(backend)?;
    Ok(())
}

/// `n` fresh event seqs, ascending.
async fn reserve_seqs(tx: &deadpool_postgres::Transaction<'_>, n: usize) -> Result<Vec<i64>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    let stmt = tx
        .prepare_cached("SELECT nextval('events_seq') FROM generate_series(1, $1::bigint)")
        .await
        .map_err(backend)?;
    let rows = tx.query(&stmt, &[&big(n)]).await.map_err(backend)?;
    let mut seqs = rows
        .iter()
        .map(|r| get::<i64>(r, 0))
        .collect::<Result<Vec<_>>>()?;
    seqs.sort_unstable();
    Ok(seqs)
}

pub(super) async fn recent_events(
    client: &Client,
    source_id: &str,
    before_seq: Option<i64>,
    limit: u32,
) -> Result<Vec<StoredEvent>> {
    let stmt = client
        .prepare_cached(
            "SELECT seq, source_id, message_id, event_type, received_at, body FROM events
             WHERE source_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3",
        )
        .await
        .map_err(backend)?;
    let before = before_seq.unwrap_or(i64::MAX);
    let rows = client
        .query(&stmt, &[&source_id, &before, &sql_limit(limit)])
        .await
        .map_err(backend)?;
    rows.iter()
        .map(|row| {
            Ok(StoredEvent {
                seq: get(row, 0)?,
                source_id: get(row, 1)?,
                message_id: get(row, 2)?,
                event_type: get(row, 3)?,
                received_at: time(row, 4)?,
                body: get(row, 5)?,
            })
        })
        .collect()
}

pub(super) async fn usage(
    client: &Client,
    source_id: &str,
    from: &str,
    to: &str,
) -> Result<Vec<UsageDay>> {
    let stmt = client
        .prepare_cached(
            "SELECT day, api_calls, events FROM usage
             WHERE source_id = $1 AND day >= $2 AND day <= $3 ORDER BY day",
        )
        .await
        .map_err(backend)?;
    let rows = client
        .query(&stmt, &[&source_id, &from, &to])
        .await
        .map_err(backend)?;
    rows.iter()
        .map(|row| {
            Ok(UsageDay {
                day: get(row, 0)?,
                api_calls: unsigned(row, 1)?,
                events: unsigned(row, 2)?,
            })
        })
        .collect()
}
