//! A group's delivery rows, some of them leased at ingest to this node's
//! delivery engine ([`crate::local`]).
//!
//! # Invariants
//! - **The same lease a claim takes.** A row leased here carries this
//!   node's `lease_owner` and a `lease_until` one engine lease ahead, so no
//!   node's claim takes it, the membership releases it if this node dies,
//!   and its lease ends by itself if the hand-over never happens (a commit
//!   whose answer was lost).
//! - **Handed over only once committed.** The rows go to the engine after
//!   `COMMIT` succeeds (`ingest::append_batch`): the engine never sends a
//!   delivery whose row may yet roll back, and a report always finds it.
//! - **Released when the commit went unanswered.** A group whose `COMMIT`
//!   got no answer (the connection dropped during it) may have committed.
//!   Its leased rows are then released by id on another connection, so
//!   any node's claim sends them within a second or two, not when the lease
//!   ends ([`release_unanswered`]). Ids are never reused, so a group that
//!   rolled back releases nothing; the release names this node and the
//!   lease it wrote, so it never clears a lease anyone took since.
//! - **In order, within the room.** The first rows of the group are leased,
//!   as many as the engine has room for, skipping those of a destination
//!   the engine is too busy to take from ingest; the rest are left to
//!   claims, due at once as before.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use deadpool_postgres::{GenericClient, Pool, Transaction};

use super::rows::{backend, big, get, ms, pool_error};
use crate::local::{LocalDelivery, Taken};
use crate::{AppendRequest, DueDelivery, NewEvent, Result};

/// This node's engine, when it takes deliveries from ingest.
#[derive(Clone, Copy)]
pub(super) struct Local<'a> {
    pub delivery: &'a Arc<LocalDelivery>,
    pub node: &'a str,
}

/// The deliveries one group leased to this node, and the lease they carry.
pub(super) struct Leased {
    pub taken: Taken,
    /// Their `lease_until` (ms); 0 when none was leased.
    pub until: i64,
    /// Which of the group's rows were leased, in order; empty when none.
    pub rows: Vec<bool>,
}

/// The pending deliveries of one group, as arrays bound to `UNNEST`, with
/// what the engine needs of each to send it.
#[derive(Default)]
pub(super) struct Rows<'a> {
    seqs: Vec<i64>,
    dests: Vec<&'a str>,
    sources: Vec<&'a str>,
    at: Vec<i64>,
    /// A destination's own body, when its transform gave it one.
    bodies: Vec<Option<&'a str>>,
    message_ids: Vec<&'a str>,
    /// What is sent: the destination's own body, else the event's.
    sent: Vec<&'a str>,
    received: Vec<DateTime<Utc>>,
}

impl<'a> Rows<'a> {
    /// Adds `event`'s deliveries, stored as `seq`.
    pub(super) fn add(&mut self, request: &'a AppendRequest, event: &'a NewEvent, seq: i64) {
        for destination_id in &event.destination_ids {
            let own = event.own_body(destination_id);
            self.seqs.push(seq);
            self.dests.push(destination_id);
            self.sources.push(&request.source_id);
            self.at.push(ms(request.received_at));
            self.bodies.push(own);
            self.message_ids.push(&event.message_id);
            self.sent.push(own.unwrap_or(&event.body));
            self.received.push(request.received_at);
        }
    }

    pub(super) fn len(&self) -> usize {
        self.seqs.len()
    }
}

/// Inserts `rows` as pending deliveries, the first of them leased to
/// `local`'s engine as far as its room allows, except those for a busy
/// destination.
pub(super) async fn insert(
    tx: &Transaction<'_>,
    rows: &Rows<'_>,
    local: Option<Local<'_>>,
) -> Result<Leased> {
    let none = |taken| Leased {
        taken,
        until: 0,
        rows: Vec::new(),
    };
    if rows.len() == 0 {
        return Ok(none(Taken::none()));
    }
    let mut taken = match local {
        Some(local) => local.delivery.take(rows.dests.iter().copied()),
        None => Taken::none(),
    };
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 5] = [
        &rows.seqs,
        &rows.dests,
        &rows.sources,
        &rows.at,
        &rows.bodies,
    ];
    let (Some(local), 1..) = (local, taken.count()) else {
        // Rows come out of UNNEST in array order, so delivery ids follow
        // event order: `claim_due` breaks ties by id.
        let stmt = tx
            .prepare_cached(
                "INSERT INTO deliveries (event_seq, destination_id, source_id, state, attempts,
                                         next_attempt_at, updated_at, body)
                 SELECT s, d, src, 'pending', 0, t, t, b
                 FROM UNNEST($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::text[])
                      AS u(s, d, src, t, b)",
            )
            .await
            .map_err(backend)?;
        tx.execute(&stmt, &params).await.map_err(backend)?;
        return Ok(none(taken));
    };
    let stmt = tx
        .prepare_cached(
            "WITH ins AS (
                 INSERT INTO deliveries (event_seq, destination_id, source_id, state, attempts,
                                         next_attempt_at, updated_at, body, lease_until,
                                         lease_owner)
                 SELECT s, d, src, 'pending', 0, t, t, b,
                        CASE WHEN l THEN $7::bigint END,
                        CASE WHEN l THEN $8::text END
                 FROM UNNEST($1::bigint[], $2::text[], $3::text[], $4::bigint[], $5::text[],
                             $6::bool[])
                      AS u(s, d, src, t, b, l)
                 RETURNING id, event_seq, destination_id, lease_owner)
             SELECT id, event_seq, destination_id FROM ins WHERE lease_owner IS NOT NULL",
        )
        .await
        .map_err(backend)?;
    let lease_until = ms(Utc::now()).saturating_add(big(local.delivery.lease().as_millis()));
    // The first rows the room allows, skipping busy destinations.
    let mut room = taken.count();
    let leasing: Vec<bool> = (rows.dests.iter())
        .map(|dest| {
            let lease = room > 0 && taken.open_for(dest);
            room -= usize::from(lease);
            lease
        })
        .collect();
    let mut all = params.to_vec();
    all.extend([
        &leasing as &(dyn tokio_postgres::types::ToSql + Sync),
        &lease_until,
        &local.node,
    ]);
    let returned = tx.query(&stmt, &all).await.map_err(backend)?;
    let index: HashMap<(i64, &str), usize> = (0..rows.len())
        .filter(|&i| leasing[i])
        .map(|i| ((rows.seqs[i], rows.dests[i]), i))
        .collect();
    for row in &returned {
        let (id, seq, dest): (i64, i64, String) = (get(row, 0)?, get(row, 1)?, get(row, 2)?);
        let Some(&i) = index.get(&(seq, dest.as_str())) else {
            continue;
        };
        taken.lease(DueDelivery::unattempted(
            id,
            seq,
            dest,
            rows.message_ids[i].to_owned(),
            rows.sent[i].to_owned(),
            rows.received[i],
        ));
    }
    Ok(Leased {
        taken,
        until: lease_until,
        rows: leasing,
    })
}

/// The pauses between tries of [`release_unanswered`], doubling: a group
/// that did commit is released within a second or so of its commit, and
/// one that rolled back costs about twenty cheap statements in a minute.
const RELEASE_FIRST_PAUSE: std::time::Duration = std::time::Duration::from_millis(250);
const RELEASE_LAST_PAUSE: std::time::Duration = std::time::Duration::from_secs(4);

/// Releases `leased` for any node's claim after its group's `COMMIT` went
/// unanswered (see the invariants). Runs in the background until the lease
/// would have ended by itself, tried again while the database is out of
/// reach or while the rows are not there: the server may still be
/// committing the group (waiting on a standby, say) when the connection
/// drops, or it rolled the group back.
pub(super) fn release_unanswered(pool: &Pool, leased: Leased, node: &str) {
    let ids = leased.taken.delivery_ids();
    // The units go back now: nothing is handed over.
    drop(leased.taken);
    release_in_background(pool, ids, node, leased.until);
}

/// Releases `ids`, leased to `node` until `until`, in the background, tried
/// until they are released or the lease has ended by itself.
fn release_in_background(pool: &Pool, ids: Vec<i64>, node: &str, until: i64) {
    if ids.is_empty() {
        return;
    }
    let (pool, node) = (pool.clone(), node.to_owned());
    tokio::spawn(async move {
        let mut pause = RELEASE_FIRST_PAUSE;
        while ms(Utc::now()) < until {
            match release(&pool, &ids, &node, until).await {
                Ok(released @ 1..) => {
                    tracing::info!(
                        released,
                        leased = ids.len(),
                        "deliveries of a group whose commit went unanswered released for claims"
                    );
                    return;
                }
                Ok(0) => {}
                Err(e) => {
                    tracing::debug!(error = %e, "releasing deliveries of an unanswered commit; retrying");
                }
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(RELEASE_LAST_PAUSE);
        }
    });
}

/// Releases for claims the deliveries of a committed group that the engine
/// stopped before taking (a clean stop, between the group's take of room
/// and its commit): otherwise they would wait for the other nodes' next
/// beat, or for their lease when no other node runs. Tried once on `c`,
/// the group's own connection; when that fails, in the background as
/// after an unanswered commit.
pub(super) async fn release_committed(
    c: &impl GenericClient,
    pool: &Pool,
    ids: Vec<i64>,
    node: &str,
    until: i64,
) {
    match release_on(c, &ids, node, until).await {
        Ok(released) => tracing::debug!(
            released,
            "deliveries committed as the delivery engine stopped released for claims"
        ),
        Err(_) => release_in_background(pool, ids, node, until),
    }
}

async fn release(pool: &Pool, ids: &[i64], node: &str, until: i64) -> Result<u64> {
    let client = pool.get().await.map_err(pool_error)?;
    release_on(&client, ids, node, until).await
}

async fn release_on(c: &impl GenericClient, ids: &[i64], node: &str, until: i64) -> Result<u64> {
    c.execute(
        "UPDATE deliveries SET lease_until = NULL, lease_owner = NULL
         WHERE id = ANY($1) AND state = 'pending' AND lease_owner = $2 AND lease_until = $3",
        &[&ids, &node, &until],
    )
    .await
    .map_err(backend)
}
