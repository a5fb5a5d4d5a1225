//! Membership on the shared database: `nodes (id, heartbeat_at,
//! handed_from)`, one row per node, upserted by its heartbeat. A row silent
//! for [`FORGET_AFTER_TTLS`] times the time-to-live is deleted by any node's
//! heartbeat, so killed nodes do not pile up, once another node has
//! restored the deliveries it handed without rows (`rowless`).
//!
//! `heartbeat_at` is the database's clock, not the node's: a node whose
//! clock runs a few seconds behind would otherwise look silent to the
//! others while it beats. And the membership has a connection of its own
//! (`PostgresStore::membership`): a beat that waited for a pooled one
//! behind busy ingest could wait longer than the time-to-live, and the
//! others would take a live node for gone. A beat that takes longer than
//! half the time-to-live fails, and its connection is dropped rather than
//! reused (it may hang on a dead peer until TCP gives up).

use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use deadpool_postgres::Object;

use super::PostgresStore;
use super::rowless;
use super::rows::{backend, get, ms, pool_error};
use crate::{ClusterStore, ErrorKind, Members, Result, StoreError};

/// Version 11.
pub(super) const SCHEMA: &str = "
CREATE TABLE nodes (
    id           text PRIMARY KEY,
    heartbeat_at bigint NOT NULL
);
";

/// Version 15: who holds a delivery's lease, so a dead node's leases can be
/// released when it drops out (see [`ClusterStore::release_leases`]).
pub(super) const LEASE_OWNER: &str = "ALTER TABLE deliveries ADD COLUMN lease_owner text;";

/// A silent node's row is kept this many TTLs, then deleted.
const FORGET_AFTER_TTLS: i64 = 60;

#[async_trait]
impl ClusterStore for PostgresStore {
    async fn heartbeat(&self, node: &str, ttl: Duration) -> Result<Members> {
        let ttl_ms = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
        // Before the beat is sent: the row's time is no earlier than this.
        let sent = std::time::Instant::now();
        let limit = ttl / 2;
        let late =
            || StoreError::backend(ErrorKind::Timeout, format!("heartbeat took over {limit:?}"));
        let client = tokio::time::timeout(limit, self.membership.get())
            .await
            .map_err(|_| late())?
            .map_err(pool_error)?;
        // One statement. Its select sees the table as it was before the
        // statement, so the node's own row comes from the upsert's RETURNING.
        // The floor is read before the beat: it only rises, so the value
        // written is never above the one that holds when it lands.
        let floor = self.rowless.floor();
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 4] =
            [&node, &ttl_ms, &FORGET_AFTER_TTLS, &floor];
        let beat = client.query(
            "WITH clock AS (
                     SELECT (extract(epoch FROM statement_timestamp()) * 1000)::bigint AS now
                 ), beat AS (
                     INSERT INTO nodes (id, heartbeat_at, handed_from) SELECT $1, now, $4 FROM clock
                     ON CONFLICT (id) DO UPDATE
                     SET heartbeat_at = excluded.heartbeat_at, handed_from = excluded.handed_from
                     RETURNING id
                 ), forgotten AS (
                     DELETE FROM nodes
                     WHERE heartbeat_at < (SELECT now FROM clock) - $2::bigint * $3::bigint
                       AND id <> $1 AND handed_from IS NULL
                 ), given AS (
                     SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END AS seq
                     FROM events_seq
                 )
                 SELECT id, heartbeat_at >= (SELECT now FROM clock) - $2::bigint,
                        (SELECT seq FROM given)
                 FROM nodes WHERE id <> $1
                 UNION ALL SELECT id, true, (SELECT seq FROM given) FROM beat
                 ORDER BY 1",
            &params,
        );
        let answer = tokio::time::timeout(limit, beat).await;
        let rows = match answer {
            Ok(rows) => rows.map_err(backend)?,
            Err(_) => {
                drop(Object::take(client));
                return Err(late());
            }
        };
        // Every seq up to the sequence's value was given out before this
        // node reads it, so the floor may rise to it while nothing is held:
        // a node that ingests little keeps a recent floor.
        if let Some(row) = rows.first() {
            self.rowless.saw(get::<i64>(row, 2)?);
        }
        self.rowless.beat(sent, ttl);
        self.restore_overdue();
        let mut members = Members::default();
        for row in &rows {
            let id: String = get(row, 0)?;
            if get::<bool>(row, 1)? {
                members.live.push(id);
            } else {
                members.silent.push(id);
            }
        }
        Ok(members)
    }

    fn node_id(&self) -> &str {
        &self.node
    }

    /// Walks the pending deliveries due by `now` (the `deliveries_due`
    /// index: a leased delivery was due when it was claimed), which only a
    /// node's death makes worth doing. `lease_owner` is in no index, so
    /// claims stay heap-only updates.
    async fn release_leases(&self, nodes: &[String], now: DateTime<Utc>) -> Result<u64> {
        // A pooled connection: a long walk must not hold up the beats.
        let client = self.client().await?;
        let released = client
            .execute(
                "UPDATE deliveries SET lease_until = NULL, lease_owner = NULL
                 WHERE state = 'pending' AND next_attempt_at <= $2
                   AND lease_owner = ANY($1) AND lease_until > $2",
                &[&nodes, &ms(now)],
            )
            .await
            .map_err(backend)?;
        let restored = rowless::restore_silent(&client, nodes).await?;
        Ok(released + restored)
    }

    async fn leave(&self, node: &str) -> Result<()> {
        // What the engine handed back as it stopped has its rows by now;
        // anything else is written here. While some are left the row
        // stays, and the others restore them once it falls silent.
        let left = self.rowless.overdue(true);
        if !left.is_empty() {
            rowless::restore(&self.client().await?, node, &left).await?;
            self.rowless.written(left.iter().map(|(id, _)| *id));
        }
        let client = self.membership.get().await.map_err(pool_error)?;
        client
            .execute("DELETE FROM nodes WHERE id = $1", &[&node])
            .await
            .map_err(backend)?;
        Ok(())
    }
}

impl PostgresStore {
    /// Writes, in the background, the rows of the handed deliveries whose
    /// report has not come within the engine's lease, as a claimed row's
    /// lease would end (see `rowless`).
    fn restore_overdue(&self) {
        let overdue = self.rowless.overdue(false);
        if overdue.is_empty() {
            return;
        }
        let (pool, rowless, node) = (self.pool.clone(), self.rowless.clone(), self.node.clone());
        tokio::spawn(async move {
            let Ok(client) = pool.get().await else {
                return;
            };
            match rowless::restore(&client, &node, &overdue).await {
                Ok(found) => {
                    rowless.written(overdue.iter().map(|(id, _)| *id));
                    tracing::warn!(
                        deliveries = overdue.len(),
                        found,
                        "deliveries with no report within their lease written for claims"
                    );
                }
                Err(e) => tracing::debug!(error = %e, "writing overdue deliveries; retrying"),
            }
        });
    }
}
