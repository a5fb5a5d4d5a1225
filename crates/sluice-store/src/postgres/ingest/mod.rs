//! The ingest outbox: events (each saying what it counts in usage, see
//! `usage_feed`) and their deliveries, many requests per transaction, a
//! fixed handful of statements per group.

use std::collections::{BTreeMap, HashSet};

use deadpool_postgres::{Client, Pool};

use super::leased::{self, Local};
use super::rowless;
use super::rows::{backend, big, day, get, pool_error, sql_limit, time};
use crate::local::Taken;
use crate::{AppendRequest, Appended, Result, StoreError, StoredEvent};

mod at_ingest;
mod columns;

use at_ingest::AtIngest;
pub(super) use columns::Columns;

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

/// Commits `requests` in one transaction: reserve one seq per event (in
/// order, so a request's events keep their order), insert all events, all
/// deliveries, then, when there were repeats or requests with no stored
/// call, the usage the events cannot count, summed per (source, day).
/// Statements per group: 3 or 4, whatever the number of requests and events. With a
/// deduplication `window` the events insert decides which events are stored
/// (`dedup::insert`); the answer says so per request.
pub(super) async fn append_batch(
    pool: &Pool,
    requests: &[&AppendRequest],
    opts: GroupOptions,
    local: Option<Local<'_>>,
) -> Result<Vec<Appended>, BatchError> {
    let mut client = pool
        .get()
        .await
        .map_err(|e| BatchError::NotWritten(pool_error(e)))?;
    // Held from before the seqs are reserved until the rowless deliveries
    // are (`rowless`): the floor stays below every seq this group gets.
    let floor = local.map(|l| l.rowless.group());
    let mut tries = 0;
    loop {
        tries += 1;
        let tx = client
            .transaction()
            .await
            .map_err(|e| BatchError::NotWritten(backend(e)))?;
        let (outcomes, leased) = match write(&tx, requests, opts, local).await {
            Ok(written) => written,
            // Another node committed one of the ids meanwhile (see
            // `dedup`): written again, the check sees its copy.
            Err(StoreError::Conflict(_)) if tries < CONFLICT_TRIES => continue,
            Err(e) => return Err(BatchError::NotWritten(e)),
        };
        let committed = tx.commit().await;
        // Committed or maybe committed: the rowless deliveries are this
        // node's to see written from now on.
        if let Some(local) = local {
            local.rowless.hold(leased.rowless.iter().cloned());
        }
        drop(floor);
        if let Err(e) = committed {
            if let Some(local) = local {
                leased::release_unanswered(pool, leased, local);
            }
            return Err(BatchError::Unknown(backend(e)));
        }
        let given = leased::split(&leased);
        let stopped = leased.taken.hand();
        if let Some(local) = local.filter(|_| !stopped.is_empty()) {
            leased::release_committed(&client, pool, given, stopped, local).await;
        }
        return Ok(outcomes);
    }
}

/// How often a group is written again after another node stored one of
/// its ids at the same moment. Each try sees what the one before waited
/// for, so the second normally succeeds.
pub(super) const CONFLICT_TRIES: u32 = 4;

/// What every group of one node is written with.
#[derive(Debug, Clone, Copy)]
pub(super) struct GroupOptions {
    /// The deduplication window (`dedup`); `None` stores every call.
    pub window: Option<std::time::Duration>,
    /// This node's rows of the usage counters: each node adds to rows of
    /// its own, so no two nodes' ingest transactions update one row (reads
    /// sum the shards).
    pub usage_shard: i32,
    /// Whether the calls count in usage: not when a call read from the
    /// event log is handed to retry state (`hand_off`).
    pub usage: bool,
}

/// An event's seq and its deliveries' plans; `None` for a repeat within
/// its group.
type Planned = Option<(i64, Vec<leased::Plan>)>;

/// Writes `requests` into `tx`: their events, deliveries (the first leased
/// to `local`'s engine as its room allows) and usage. The leased
/// deliveries are to be handed over once `tx` commits.
pub(super) async fn write(
    tx: &deadpool_postgres::Transaction<'_>,
    requests: &[&AppendRequest],
    opts: GroupOptions,
    local: Option<Local<'_>>,
) -> Result<(Vec<Appended>, leased::Leased)> {
    // Each (source, messageId)'s first occurrence in the group gets a seq
    // and goes to the insert, which keeps those no earlier event holds;
    // with the window off, every event is stored.
    let mut once: HashSet<(&str, &str)> = HashSet::new();
    let firsts: Vec<Vec<bool>> = requests
        .iter()
        .map(|request| {
            request
                .events
                .iter()
                .map(|event| {
                    opts.window.is_none()
                        || once.insert((request.source_id.as_str(), event.message_id.as_str()))
                })
                .collect()
        })
        .collect();
    let total = firsts.iter().flatten().filter(|first| **first).count();
    // Which deliveries go to the engine, decided before the insert: the
    // events insert names those handed without a row (`rowless`).
    let stored_events = || {
        requests.iter().zip(&firsts).flat_map(|(request, firsts)| {
            (request.events.iter().zip(firsts))
                .filter(|(_, first)| **first)
                .map(|(event, _)| event)
        })
    };
    let taken = match local {
        Some(local) => local.delivery.take(
            stored_events().flat_map(|event| event.destination_ids.iter().map(String::as_str)),
        ),
        None => Taken::none(),
    };
    let rowless = local.is_some_and(|l| l.rowless.beating());
    let mut plans = leased::plan(
        &taken,
        rowless,
        stored_events().flat_map(|event| {
            (event.destination_ids.iter()).map(|d| (d.as_str(), event.own_body(d).is_some()))
        }),
    );
    let handing = plans
        .iter()
        .filter(|p| matches!(p, leased::Plan::Rowless(_)))
        .count();
    let (seqs, ids) = if opts.window.is_some() {
        // Sent together: the setting costs no round trip of its own.
        let (generic, reserved) = tokio::join!(
            tx.batch_execute(super::dedup::GENERIC_PLAN),
            reserve(tx, total, handing)
        );
        generic.map_err(backend)?;
        reserved?
    } else {
        reserve(tx, total, handing).await?
    };
    if let (Some(local), Some(last)) = (local, seqs.last()) {
        local.rowless.saw(*last);
    }
    let mut ids = ids.into_iter();
    for plan in &mut plans {
        if let leased::Plan::Rowless(id) = plan {
            *id = ids
                .next()
                .ok_or_else(|| StoreError::internal("fewer delivery ids reserved than handed"))?;
        }
    }
    let mut plans = plans.into_iter();
    let mut seq_iter = seqs.into_iter();
    let mut events = Columns::default();
    let mut seq_of: Vec<Vec<Planned>> = Vec::with_capacity(requests.len());
    // The event of each request that counts the request in usage, when it
    // is stored (`usage_feed`).
    let mut counts_request: Vec<Option<i64>> = Vec::with_capacity(requests.len());
    for (request, firsts) in requests.iter().zip(&firsts) {
        let mut of_request = Vec::with_capacity(request.events.len());
        let mut marked = None;
        for (event, first) in request.events.iter().zip(firsts) {
            if !first {
                of_request.push(None);
                continue;
            }
            let seq = seq_iter
                .next()
                .ok_or_else(|| StoreError::internal("fewer seqs reserved than events"))?;
            events.push(seq, request, event);
            if let (true, Some(slot)) = (opts.usage, events.counts.last_mut()) {
                *slot = Some(if marked.is_none() { 2 } else { 1 });
                marked.get_or_insert(seq);
            }
            let planned: Vec<leased::Plan> =
                plans.by_ref().take(event.destination_ids.len()).collect();
            let handed = rowless::encode((planned.iter().zip(&event.destination_ids)).filter_map(
                |(plan, dest)| match plan {
                    leased::Plan::Rowless(id) => Some((*id, dest.as_str())),
                    _ => None,
                },
            ));
            if let (Some(slot), false) = (events.handed.last_mut(), handed.is_empty()) {
                *slot = Some(handed);
            }
            of_request.push(Some((seq, planned)));
        }
        seq_of.push(of_request);
        counts_request.push(marked);
    }
    if opts.window.is_some() {
        events.sort_by_id();
    }
    let node = local.map_or("", |l| l.node);
    let stored = super::dedup::insert(tx, &events, opts.window, node).await?;
    drop(events);
    let kept = |r: usize, e: usize| seq_of[r][e].as_ref().filter(|(s, _)| stored.contains(s));
    let mut outcomes = vec![Appended::default(); requests.len()];
    let mut deliveries = leased::Rows::default();
    // Each request's end in `deliveries`: it was wholly handed over when
    // every row of its own went to the engine.
    let mut ends = Vec::with_capacity(requests.len());
    let mut at_ingest = AtIngest::default();
    // What the stored events do not count (`usage_feed`): requests whose
    // counting event was not stored, and repeats. BTreeMap: one row per
    // key (an upsert may not touch a row twice) and a fixed lock order, so
    // two nodes updating the same counters never deadlock.
    let mut usage: BTreeMap<(&str, String), (i64, i64)> = BTreeMap::new();
    for (r, request) in requests.iter().enumerate() {
        for (e, event) in request.events.iter().enumerate() {
            let Some((seq, planned)) = kept(r, e) else {
                outcomes[r].duplicates += 1;
                continue;
            };
            outcomes[r].stored += 1;
            deliveries.add(request, event, *seq, planned);
            at_ingest.add(request, event, *seq);
        }
        ends.push(deliveries.len());
        let counted = counts_request[r].is_some_and(|seq| stored.contains(&seq));
        if !counted || outcomes[r].duplicates > 0 {
            let counters = usage
                .entry((request.source_id.as_str(), day(request.received_at)))
                .or_default();
            counters.0 += i64::from(!counted);
            counters.1 += i64::try_from(outcomes[r].duplicates).unwrap_or(i64::MAX);
        }
    }
    let leased = leased::insert(tx, &deliveries, taken, local).await?;
    let mut start = 0;
    for (outcome, end) in outcomes.iter_mut().zip(ends) {
        let rows = leased.rows.get(start..end).unwrap_or_default();
        outcome.handed = !rows.is_empty() && rows.iter().all(|&leased| leased);
        start = end;
    }
    at_ingest.write(tx, opts.usage_shard).await?;
    if !opts.usage || usage.is_empty() {
        return Ok((outcomes, leased));
    }
    let mut u_sources = Vec::with_capacity(usage.len());
    let mut u_days = Vec::with_capacity(usage.len());
    let (mut u_calls, mut u_dups) = (Vec::new(), Vec::new());
    for ((source_id, day), (calls, dups)) in usage {
        u_sources.push(source_id);
        u_days.push(day);
        u_calls.push(calls);
        u_dups.push(dups);
    }
    let upsert = tx
        .prepare_cached(
            "INSERT INTO usage AS u (source_id, day, api_calls, events, duplicates, shard)
             SELECT s, d, c, 0, r, $5::integer
             FROM UNNEST($1::text[], $2::text[], $3::bigint[], $4::bigint[]) AS x(s, d, c, r)
             ON CONFLICT (source_id, day, shard) DO UPDATE
             SET api_calls = u.api_calls + excluded.api_calls,
                 duplicates = u.duplicates + excluded.duplicates",
        )
        .await
        .map_err(backend)?;
    tx.execute(
        &upsert,
        &[&u_sources, &u_days, &u_calls, &u_dups, &opts.usage_shard],
    )
    .await
    .map_err(backend)?;
    Ok((outcomes, leased))
}

/// `events` fresh event seqs and `deliveries` fresh delivery ids, each
/// ascending, in one statement.
async fn reserve(
    tx: &deadpool_postgres::Transaction<'_>,
    events: usize,
    deliveries: usize,
) -> Result<(Vec<i64>, Vec<i64>)> {
    if events == 0 {
        return Ok((Vec::new(), Vec::new()));
    }
    if deliveries == 0 {
        let stmt = tx
            .prepare_cached("SELECT nextval('events_seq') FROM generate_series(1, $1::bigint)")
            .await
            .map_err(backend)?;
        let rows = tx.query(&stmt, &[&big(events)]).await.map_err(backend)?;
        return Ok((sorted(&rows, 0)?, Vec::new()));
    }
    let stmt = tx
        .prepare_cached(
            "SELECT CASE WHEN g <= $1 THEN nextval('events_seq') END,
                    CASE WHEN g <= $2 THEN nextval('deliveries_id_seq') END
             FROM generate_series(1, greatest($1::bigint, $2::bigint)) AS g",
        )
        .await
        .map_err(backend)?;
    let rows = tx
        .query(&stmt, &[&big(events), &big(deliveries)])
        .await
        .map_err(backend)?;
    Ok((sorted(&rows, 0)?, sorted(&rows, 1)?))
}

/// Column `i`'s values that are not NULL, ascending.
fn sorted(rows: &[tokio_postgres::Row], i: usize) -> Result<Vec<i64>> {
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        if let Some(v) = get::<Option<i64>>(row, i)? {
            out.push(v);
        }
    }
    out.sort_unstable();
    Ok(out)
}

pub(super) async fn recent_events(
    client: &Client,
    source_id: &str,
    before_seq: Option<i64>,
    limit: u32,
) -> Result<Vec<StoredEvent>> {
    let stmt = client
        .prepare_cached(
            "SELECT seq, source_id, message_id, event_type, received_at, body, blocked FROM events
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
                blocked: get(row, 6)?,
            })
        })
        .collect()
}
