//! The ingest outbox: events, their deliveries and usage, many requests per
//! transaction, a fixed handful of statements per group.

use std::collections::{BTreeMap, HashSet};

use deadpool_postgres::{Client, Pool};

use super::leased::{self, Local};
use super::rows::{backend, big, day, get, ms, pool_error, sql_limit, time};
use crate::{AppendRequest, Appended, Result, StoreError, StoredEvent};

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

/// The events of one group, as arrays bound to `UNNEST`.
#[derive(Default)]
pub(super) struct Columns {
    pub(super) seqs: Vec<i64>,
    source_ids: Vec<String>,
    message_ids: Vec<String>,
    event_types: Vec<String>,
    received_ats: Vec<i64>,
    bodies: Vec<String>,
    blocked: Vec<Option<String>>,
    persons: Vec<i16>,
}

impl Columns {
    fn push(&mut self, seq: i64, request: &AppendRequest, event: &crate::NewEvent) {
        self.seqs.push(seq);
        self.source_ids.push(request.source_id.clone());
        self.message_ids.push(event.message_id.clone());
        self.event_types.push(event.event_type.clone());
        self.received_ats.push(ms(request.received_at));
        self.bodies.push(event.body.clone());
        self.persons.push(i16::try_from(event.person).unwrap_or(0));
        self.blocked
            .push(event.blocked.as_ref().map(|b| b.rule.clone()));
    }

    /// `$1` … `$8` of the events insert.
    pub(super) fn params(&self) -> Vec<&(dyn tokio_postgres::types::ToSql + Sync)> {
        vec![
            &self.seqs,
            &self.source_ids,
            &self.message_ids,
            &self.event_types,
            &self.received_ats,
            &self.bodies,
            &self.blocked,
            &self.persons,
        ]
    }

    /// Puts the rows in (messageId, source) order, the order in which
    /// concurrent groups lock the same ids.
    pub(super) fn sort_by_id(&mut self) {
        let mut order: Vec<usize> = (0..self.seqs.len()).collect();
        order.sort_unstable_by(|&a, &b| {
            (&self.message_ids[a], &self.source_ids[a])
                .cmp(&(&self.message_ids[b], &self.source_ids[b]))
        });
        fn apply<T: Default>(v: &mut Vec<T>, order: &[usize]) {
            let mut taken: Vec<T> = order.iter().map(|&i| std::mem::take(&mut v[i])).collect();
            std::mem::swap(v, &mut taken);
        }
        apply(&mut self.seqs, &order);
        apply(&mut self.source_ids, &order);
        apply(&mut self.message_ids, &order);
        apply(&mut self.event_types, &order);
        apply(&mut self.received_ats, &order);
        apply(&mut self.bodies, &order);
        apply(&mut self.blocked, &order);
        apply(&mut self.persons, &order);
    }
}

/// Commits `requests` in one transaction: reserve one seq per event (in
/// order, so a request's events keep their order), insert all events, all
/// deliveries, then the usage counters summed per (source, day). Statements
/// per group: 4, whatever the number of requests and events. With a
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
        if let Err(e) = tx.commit().await {
            if let Some(local) = local {
                leased::release_unanswered(pool, leased, local.node);
            }
            return Err(BatchError::Unknown(backend(e)));
        }
        let stopped = leased.taken.hand();
        if let Some(local) = local.filter(|_| !stopped.is_empty()) {
            leased::release_committed(&client, pool, stopped, local.node, leased.until).await;
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
    let seqs = if opts.window.is_some() {
        // Sent together: the setting costs no round trip of its own.
        let (generic, seqs) = tokio::join!(
            tx.batch_execute(super::dedup::GENERIC_PLAN),
            reserve_seqs(tx, total)
        );
        generic.map_err(backend)?;
        seqs?
    } else {
        reserve_seqs(tx, total).await?
    };
    let mut seq_iter = seqs.into_iter();
    let mut events = Columns::default();
    let mut seq_of: Vec<Vec<Option<i64>>> = Vec::with_capacity(requests.len());
    for (request, firsts) in requests.iter().zip(&firsts) {
        let mut of_request = Vec::with_capacity(request.events.len());
        for (event, first) in request.events.iter().zip(firsts) {
            if !first {
                of_request.push(None);
                continue;
            }
            let seq = seq_iter
                .next()
                .ok_or_else(|| StoreError::internal("fewer seqs reserved than events"))?;
            events.push(seq, request, event);
            of_request.push(Some(seq));
        }
        seq_of.push(of_request);
    }
    if opts.window.is_some() {
        events.sort_by_id();
    }
    let stored = super::dedup::insert(tx, &events, opts.window).await?;
    drop(events);
    let kept = |r: usize, e: usize| seq_of[r][e].filter(|s| stored.contains(s));
    let mut outcomes = vec![Appended::default(); requests.len()];
    let mut deliveries = leased::Rows::default();
    // Each request's end in `deliveries`: it was wholly handed over when
    // every row of its own was leased.
    let mut ends = Vec::with_capacity(requests.len());
    let mut at_ingest = AtIngest::default();
    // BTreeMap: one row per key (an upsert may not touch a row twice) and a
    // fixed lock order, so two nodes updating the same counters never deadlock.
    let mut usage: BTreeMap<(&str, String), (i64, i64, i64)> = BTreeMap::new();
    for (r, request) in requests.iter().enumerate() {
        for (e, event) in request.events.iter().enumerate() {
            let Some(seq) = kept(r, e) else {
                outcomes[r].duplicates += 1;
                continue;
            };
            outcomes[r].stored += 1;
            deliveries.add(request, event, seq);
            at_ingest.add(request, event, seq);
        }
        ends.push(deliveries.len());
        let counters = usage
            .entry((request.source_id.as_str(), day(request.received_at)))
            .or_default();
        counters.0 += 1;
        counters.1 += i64::try_from(outcomes[r].stored).unwrap_or(i64::MAX);
        counters.2 += i64::try_from(outcomes[r].duplicates).unwrap_or(i64::MAX);
    }
    let leased = leased::insert(tx, &deliveries, local).await?;
    let mut start = 0;
    for (outcome, end) in outcomes.iter_mut().zip(ends) {
        let rows = leased.rows.get(start..end).unwrap_or_default();
        outcome.handed = !rows.is_empty() && rows.iter().all(|&leased| leased);
        start = end;
    }
    at_ingest.write(tx, opts.usage_shard).await?;
    if !opts.usage {
        return Ok((outcomes, leased));
    }
    let mut u_sources = Vec::with_capacity(usage.len());
    let mut u_days = Vec::with_capacity(usage.len());
    let (mut u_calls, mut u_events, mut u_dups) = (Vec::new(), Vec::new(), Vec::new());
    for ((source_id, day), (calls, count, dups)) in usage {
        u_sources.push(source_id);
        u_days.push(day);
        u_calls.push(calls);
        u_events.push(count);
        u_dups.push(dups);
    }
    let upsert = tx
        .prepare_cached(
            "INSERT INTO usage AS u (source_id, day, api_calls, events, duplicates, shard)
             SELECT *, $6::integer FROM UNNEST($1::text[], $2::text[], $3::bigint[],
                                               $4::bigint[], $5::bigint[])
             ON CONFLICT (source_id, day, shard) DO UPDATE
             SET api_calls = u.api_calls + excluded.api_calls, events = u.events + excluded.events,
                 duplicates = u.duplicates + excluded.duplicates",
        )
        .await
        .map_err(backend)?;
    tx.execute(
        &upsert,
        &[
            &u_sources,
            &u_days,
            &u_calls,
            &u_events,
            &u_dups,
            &opts.usage_shard,
        ],
    )
    .await
    .map_err(backend)?;
    Ok((outcomes, leased))
}

/// What rules and filters decided at ingest, for a whole group: `filtered`
/// deliveries (the filter's name in `last_error`) and blocked calls per
/// (source, day, event). Both statements run only when there is something
/// to write, so a group without rules pays nothing.
#[derive(Default)]
struct AtIngest<'a> {
    f_seqs: Vec<i64>,
    f_dests: Vec<&'a str>,
    f_sources: Vec<&'a str>,
    f_filters: Vec<&'a str>,
    f_at: Vec<i64>,
    blocked: BTreeMap<(&'a str, String, &'a str), i64>,
}

impl<'a> AtIngest<'a> {
    fn add(&mut self, request: &'a AppendRequest, event: &'a crate::NewEvent, seq: i64) {
        for (destination_id, filter) in &event.filtered {
            self.f_seqs.push(seq);
            self.f_dests.push(destination_id);
            self.f_sources.push(&request.source_id);
            self.f_filters.push(filter);
            self.f_at.push(ms(request.received_at));
        }
        if let Some(b) = &event.blocked {
            let key = (
                request.source_id.as_str(),
                day(request.received_at),
                b.event.as_str(),
            );
            *self.blocked.entry(key).or_default() += 1;
        }
    }

    async fn write(self, tx: &deadpool_postgres::Transaction<'_>, shard: i32) -> Result<()> {
        if !self.f_seqs.is_empty() {
            let insert = tx
                .prepare_cached(
                    "INSERT INTO deliveries (event_seq, destination_id, source_id, state, attempts,
                                             last_error, updated_at)
                     SELECT s, d, src, 'filtered', 0, f, t
                     FROM UNNEST($1::bigint[], $2::text[], $3::text[], $4::text[], $5::bigint[])
                          AS u(s, d, src, f, t)",
                )
                .await
                .map_err(backend)?;
            let params: [&(dyn tokio_postgres::types::ToSql + Sync); 5] = [
                &self.f_seqs,
                &self.f_dests,
                &self.f_sources,
                &self.f_filters,
                &self.f_at,
            ];
            tx.execute(&insert, &params).await.map_err(backend)?;
        }
        if !self.blocked.is_empty() {
            let (mut sources, mut days, mut names, mut counts) = (vec![], vec![], vec![], vec![]);
            for ((source, day, event), n) in &self.blocked {
                sources.push(*source);
                days.push(day.as_str());
                names.push(*event);
                counts.push(*n);
            }
            let upsert = tx
                .prepare_cached(
                    "INSERT INTO usage_blocked AS u (source_id, day, event, count, shard)
                     SELECT *, $5::integer
                     FROM UNNEST($1::text[], $2::text[], $3::text[], $4::bigint[])
                     ON CONFLICT (source_id, day, event, shard)
                     DO UPDATE SET count = u.count + excluded.count",
                )
                .await
                .map_err(backend)?;
            tx.execute(&upsert, &[&sources, &days, &names, &counts, &shard])
                .await
                .map_err(backend)?;
        }
        Ok(())
    }
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
