//! Giving back what a group meant for this node's engine when it cannot
//! be handed over: leased rows released for claims, rowless deliveries
//! written as pending rows (see the invariants in [`super`]).

use std::collections::HashSet;
use std::sync::Arc;

use chrono::Utc;
use deadpool_postgres::{GenericClient, Pool};

use super::super::rowless::{self, Rowless};
use super::super::rows::{backend, big, ms, pool_error};
use super::{Leased, Local};
use crate::Result;

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
pub(in crate::postgres) fn release_unanswered(pool: &Pool, leased: Leased, local: Local<'_>) {
    let given = split(&leased);
    // The units go back now: nothing is handed over.
    drop(leased.taken);
    release_in_background(pool, given.ids, local.node, given.until);
    let until = ms(Utc::now()).saturating_add(big(local.delivery.lease().as_millis()));
    restore_in_background(pool, local.rowless, given.handed, local.node, until);
}

/// What a group gave this node's engine, by how it is given back: its
/// leased rows' ids and lease, its rowless deliveries as (id, event seq).
pub(in crate::postgres) struct Given {
    pub ids: Vec<i64>,
    pub until: i64,
    pub handed: Vec<(i64, i64)>,
}

/// `leased` as [`Given`].
pub(in crate::postgres) fn split(leased: &Leased) -> Given {
    let handed: Vec<(i64, i64)> = leased
        .rowless
        .iter()
        .map(|(id, seq, _)| (*id, *seq))
        .collect();
    let rowless: HashSet<i64> = handed.iter().map(|(id, _)| *id).collect();
    let ids = (leased.taken.delivery_ids().into_iter())
        .filter(|id| !rowless.contains(id))
        .collect();
    Given {
        ids,
        until: leased.until,
        handed,
    }
}

/// Writes the rows of `handed` (rowless, maybe committed) in the
/// background, tried until their events are found or `until`; past it
/// they are left to [`Rowless::overdue`].
fn restore_in_background(
    pool: &Pool,
    rowless: &Arc<Rowless>,
    handed: Vec<(i64, i64)>,
    node: &str,
    until: i64,
) {
    if handed.is_empty() {
        return;
    }
    let (pool, rowless, node) = (pool.clone(), Arc::clone(rowless), node.to_owned());
    tokio::spawn(async move {
        let mut pause = RELEASE_FIRST_PAUSE;
        while ms(Utc::now()) < until {
            if let Ok(client) = pool.get().await {
                match rowless::restore(&client, &node, &handed).await {
                    Ok(1..) => {
                        rowless.written(handed.iter().map(|(id, _)| *id));
                        tracing::info!(
                            deliveries = handed.len(),
                            "deliveries of a group whose commit went unanswered written for claims"
                        );
                        return;
                    }
                    Ok(0) => {}
                    Err(e) => {
                        tracing::debug!(error = %e, "writing deliveries of an unanswered commit; retrying");
                    }
                }
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(RELEASE_LAST_PAUSE);
        }
    });
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
pub(in crate::postgres) async fn release_committed(
    c: &impl GenericClient,
    pool: &Pool,
    given: Given,
    stopped: Vec<i64>,
    local: Local<'_>,
) {
    let stopped: HashSet<i64> = stopped.into_iter().collect();
    let ids: Vec<i64> = (given.ids.into_iter())
        .filter(|id| stopped.contains(id))
        .collect();
    let handed: Vec<(i64, i64)> = (given.handed.into_iter())
        .filter(|(id, _)| stopped.contains(id))
        .collect();
    if !ids.is_empty() {
        match release_on(c, &ids, local.node, given.until).await {
            Ok(released) => tracing::debug!(
                released,
                "deliveries committed as the delivery engine stopped released for claims"
            ),
            Err(_) => release_in_background(pool, ids, local.node, given.until),
        }
    }
    if !handed.is_empty() {
        match rowless::restore(c, local.node, &handed).await {
            Ok(_) => local.rowless.written(handed.iter().map(|(id, _)| *id)),
            Err(_) => {
                let until = ms(Utc::now()).saturating_add(big(local.delivery.lease().as_millis()));
                restore_in_background(pool, local.rowless, handed, local.node, until);
            }
        }
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
