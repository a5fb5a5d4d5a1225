//! A group's delivery rows, some of them leased at ingest to this node's
//! delivery engine ([`crate::local`]), and the deliveries handed to it
//! with no row at all ([`super::rowless`]: most of those the engine takes;
//! a row is leased only for a delivery with a body of its own).
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
//! - **In order, within the room.** The first deliveries of the group go
//!   to the engine, as many as it has room for, skipping those of a
//!   destination the engine is too busy to take from ingest ([`plan`],
//!   decided before the events insert, which names the rowless); the rest
//!   are left to claims, due at once as before.
//! - **Rowless ones are written when they cannot be handed.** A group
//!   whose `COMMIT` went unanswered writes its rowless deliveries as
//!   pending once their events are found, as it releases its leased rows;
//!   so does a group committed as the engine stopped.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use deadpool_postgres::Transaction;

use super::rowless::Rowless;
use super::rows::{backend, big, get, ms};
use crate::local::{LocalDelivery, Taken};
use crate::{AppendRequest, DueDelivery, NewEvent, Result};

mod give_back;
pub(super) use give_back::{release_committed, release_unanswered, split};

/// This node's engine, when it takes deliveries from ingest.
#[derive(Clone, Copy)]
pub(super) struct Local<'a> {
    pub delivery: &'a Arc<LocalDelivery>,
    pub node: &'a str,
    /// This node's deliveries handed without a row.
    pub rowless: &'a Arc<Rowless>,
}

/// The deliveries one group leased to this node, and the lease they carry.
pub(super) struct Leased {
    pub taken: Taken,
    /// Their `lease_until` (ms); 0 when no row was leased.
    pub until: i64,
    /// Which of the group's deliveries went to the engine, in order; empty
    /// when none.
    pub rows: Vec<bool>,
    /// Those handed without a row (`rowless`): (id, event seq, destination).
    pub rowless: Vec<(i64, i64, String)>,
}

/// What becomes of one delivery of a group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Plan {
    /// A pending row, left to claims.
    Claim,
    /// A pending row leased to this node's engine.
    Lease,
    /// No row until its outcome (`rowless`), with its reserved id.
    Rowless(i64),
}

/// Decides, in order, which of a group's deliveries to `destinations` go
/// to the engine: the first ones the room allows, skipping busy
/// destinations; those with a body of their own (`own`) keep a leased row,
/// and so does every one unless `rowless` (this node's heartbeat is
/// recent, see `rowless`). The ids of the rowless ones are assigned later
/// (`Plan::Rowless(0)`).
pub(super) fn plan<'a>(
    taken: &Taken,
    rowless: bool,
    destinations: impl IntoIterator<Item = (&'a str, bool)>,
) -> Vec<Plan> {
    let mut room = taken.count();
    destinations
        .into_iter()
        .map(|(dest, own)| {
            if room == 0 || !taken.open_for(dest) {
                return Plan::Claim;
            }
            room -= 1;
            if own || !rowless || !super::rowless::encodable(dest) {
                Plan::Lease
            } else {
                Plan::Rowless(0)
            }
        })
        .collect()
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
    plans: Vec<Plan>,
}

impl<'a> Rows<'a> {
    /// Adds `event`'s deliveries, stored as `seq`, one plan each.
    pub(super) fn add(
        &mut self,
        request: &'a AppendRequest,
        event: &'a NewEvent,
        seq: i64,
        plans: &[Plan],
    ) {
        for (i, destination_id) in event.destination_ids.iter().enumerate() {
            self.plans
                .push(plans.get(i).copied().unwrap_or(Plan::Claim));
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

/// Inserts the rows of `rows` as pending deliveries, those planned so
/// leased to `local`'s engine; the rowless are handed without a statement.
/// `taken` is the room their plans were made with.
pub(super) async fn insert(
    tx: &Transaction<'_>,
    rows: &Rows<'_>,
    mut taken: Taken,
    local: Option<Local<'_>>,
) -> Result<Leased> {
    let mut rowless = Vec::new();
    for (i, plan) in rows.plans.iter().enumerate() {
        if let Plan::Rowless(id) = *plan {
            taken.lease(rows.due(i, id));
            rowless.push((id, rows.seqs[i], rows.dests[i].to_owned()));
        }
    }
    let flags: Vec<bool> = if rows.plans.iter().all(|p| *p == Plan::Claim) {
        Vec::new()
    } else {
        rows.plans.iter().map(|p| *p != Plan::Claim).collect()
    };
    let mut leased = Leased {
        taken,
        until: 0,
        rows: flags,
        rowless,
    };
    let subset;
    let rows = if leased.rowless.is_empty() {
        rows
    } else {
        subset = rows.written();
        &subset
    };
    if rows.len() == 0 {
        return Ok(leased);
    }
    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 5] = [
        &rows.seqs,
        &rows.dests,
        &rows.sources,
        &rows.at,
        &rows.bodies,
    ];
    let leasing: Vec<bool> = rows.plans.iter().map(|p| *p == Plan::Lease).collect();
    let (Some(local), true) = (local, leasing.contains(&true)) else {
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
        return Ok(leased);
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
        leased.taken.lease(rows.due(i, id));
    }
    leased.until = lease_until;
    Ok(leased)
}

impl<'a> Rows<'a> {
    /// Row `i` as the engine takes it, with id `id`.
    fn due(&self, i: usize, id: i64) -> DueDelivery {
        DueDelivery::unattempted(
            id,
            self.seqs[i],
            self.dests[i].to_owned(),
            self.message_ids[i].to_owned(),
            self.sent[i].to_owned(),
            self.received[i],
        )
    }

    /// The rows that are written: all but the rowless.
    fn written(&self) -> Rows<'a> {
        let mut out = Rows::default();
        for (i, plan) in self.plans.iter().enumerate() {
            if matches!(plan, Plan::Rowless(_)) {
                continue;
            }
            out.seqs.push(self.seqs[i]);
            out.dests.push(self.dests[i]);
            out.sources.push(self.sources[i]);
            out.at.push(self.at[i]);
            out.bodies.push(self.bodies[i]);
            out.message_ids.push(self.message_ids[i]);
            out.sent.push(self.sent[i]);
            out.received.push(self.received[i]);
            out.plans.push(*plan);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_room_goes_in_order_skipping_busy_destinations_and_own_bodies_keep_a_row() {
        let (local, _rx) = LocalDelivery::new(3, Duration::from_secs(60));
        local.set_busy(["dst_busy".to_owned()].into());
        let taken = local.take(["dst_a", "dst_busy", "dst_b", "dst_c", "dst_d"]);
        let plans = plan(
            &taken,
            true,
            [
                ("dst_a", false),
                ("dst_busy", false),
                ("dst_b", true),
                ("has space", false),
                ("dst_d", false),
            ],
        );
        assert_eq!(
            plans,
            [
                Plan::Rowless(0),
                Plan::Claim,
                Plan::Lease,
                Plan::Lease,
                Plan::Claim
            ]
        );
    }

    #[test]
    fn nothing_goes_to_an_engine_without_room() {
        let plans = plan(&Taken::none(), true, [("dst_a", false)]);
        assert_eq!(plans, [Plan::Claim]);
    }

    #[test]
    fn every_delivery_keeps_a_leased_row_while_the_heartbeat_is_not_recent() {
        let (local, _rx) = LocalDelivery::new(3, Duration::from_secs(60));
        let taken = local.take(["dst_a", "dst_b"]);
        let plans = plan(&taken, false, [("dst_a", false), ("dst_b", false)]);
        assert_eq!(plans, [Plan::Lease, Plan::Lease]);
    }
}
