//! The shared PostgreSQL backend: several Sluice nodes, one database.
//!
//! # Invariants
//! - **Commit before answer.** Every write, `append` included, returns only
//!   after its transaction has committed on the server; durability is then
//!   the server's (`synchronous_commit`, replication) — keep the defaults.
//! - **Outbox.** One `append` writes its events, one pending delivery per
//!   (event, destination) due at `received_at` (or, for those handed to
//!   this node's engine, their ids in the event row), each event saying
//!   what it counts in usage, in one transaction. Usage is added up from
//!   the events within a second and read exactly meanwhile
//!   (`usage_feed.rs`).
//! - **Group commit.** A writer task folds concurrent `append` calls into one
//!   transaction of three or four multi-row statements (`UNNEST` of arrays), however
//!   many requests and events it holds (see `writer.rs`, `ingest/`). A
//!   failing request is retried alone, so it never fails its neighbours.
//! - **Hand-off.** A call the Kafka shape's consumer could not deliver on
//!   its first attempt enters retry state with those attempts in one
//!   transaction (`hand_off.rs`).
//! - **One transaction per operation** for everything else, on a pooled
//!   connection (`deadpool-postgres`), each at READ COMMITTED, with row locks
//!   where a read decides a write (patches, destination ↔ source links).
//! - **Leases, not locks.** `claim_due` stamps `lease_until`; a delivery whose
//!   worker (or whole node) died is handed out again once its lease ends.
//! - **Delivered by the node that accepted it.** The writer gives a group's
//!   deliveries to this node's engine, as many as it has room for, and
//!   hands them over after the commit (`leased/`, [`crate::local`]): no
//!   claim for a call delivered at once. Most get no row until their
//!   outcome; their event names them, so the others can write them if this
//!   node dies (`rowless.rs`).
//!
//! # Tables
//! `meta`, `sources`, `destinations`, `destination_sources`, `events`,
//! `deliveries` (a settling first round of attempts in the row, see
//! `crate::settled`), `attempts`, `usage` (read through the view
//! `usage_days`), the profile engine's tables (see
//! [`crate::profiles`]; `events.xact` orders its reads), plus
//! `schema_migrations` (see `schema.rs`). Times are `bigint` unix milliseconds, UTC, as in SQLite;
//! event bodies are `text`, kept byte for byte. They live in
//! [`PostgresConfig::schema`] when set, else on the `search_path`.
//!
//! # Several nodes
//! - **Start-up.** Migrations run in one transaction behind
//!   `pg_advisory_xact_lock`: nodes starting together apply them once.
//! - **Claims.** `claim_due` picks rows `FOR UPDATE SKIP LOCKED` and leases
//!   them in the same statement: two nodes never hand out the same delivery,
//!   and neither waits for the other.
//! - **Crashes.** A node that dies mid-delivery leaves leases behind; any
//!   node claims that work once `lease_until` passes (60 s by default). A
//!   delivery may then be attempted twice (at-least-once), never lost.
//! - **Configuration.** Sources and destinations live in the database; each
//!   node's routing table is re-read every few seconds (`sluice-server`'s
//!   refresh interval), so a change made through one node reaches the others
//!   within that interval.
//! - **Retention.** Every node may prune: candidates are locked `SKIP
//!   LOCKED`, so pruners split the work instead of colliding.
//!
//! # Recovery
//! Nothing to do by hand: PostgreSQL keeps exactly the committed
//! transactions. [`PostgresStore::close`] commits queued appends before
//! closing the pool; dropping the store without closing lets the writer
//! finish queued appends on its own.

mod audit;
mod cluster;
mod config;
mod dedup;
mod delivery;
mod hand_off;
mod health;
mod ingest;
mod leased;
mod pooler;
pub(crate) mod profiles;
mod regulations;
mod rowless;
pub(crate) mod rows;
mod schema;
mod seen;
mod source_schema;
mod store_impl;
mod tally;
mod team;
mod tls;
mod upkeep;
mod usage_feed;
mod vacuum;
mod writer;

pub use config::PostgresConfig;

use std::sync::Arc;

use deadpool_postgres::{Object, Pool};

use crate::Result;
use writer::{GroupLimits, Writer};

/// How many usage counter rows a (source, day) may have at most: one per
/// node, drawn at start (see `ingest::GroupOptions`).
const USAGE_SHARDS: i32 = 1024;

/// The PostgreSQL implementation of [`crate::Store`].
pub struct PostgresStore {
    pool: Pool,
    /// One connection for the membership (`cluster.rs`), apart from `pool`.
    membership: Pool,
    /// This node's id: in the membership and on the leases it holds.
    node: String,
    writer: Writer,
    /// This node's deliveries handed to its engine without a row.
    rowless: Arc<rowless::Rowless>,
    vacuum: vacuum::DrainVacuum,
    /// Writes calls handed off from the event log to retry state.
    hand_offs: hand_off::HandOffs,
}

impl PostgresStore {
    /// Connects, brings the schema up to date and starts the ingest writer.
    /// Fails when the server cannot be reached within
    /// [`PostgresConfig::connect_timeout`].
    pub async fn open(config: PostgresConfig) -> Result<PostgresStore> {
        let guard = schema::guard();
        let schema::Opened { pool, tls } = schema::pool(&config, config.pool_size.max(2), &guard)?;
        // The heartbeat's own connection: a beat never waits behind ingest
        // for a pooled one (the wait may outlast the time-to-live). It
        // shares the guard, so a node that finds a newer schema stops
        // beating too, and the others take its work.
        let membership = schema::pool(&config, 1, &guard)?.pool;
        pooler::refuse_transaction_pooling(&pool)
            .await
            .map_err(|e| e.context(config.server_name()))?;
        schema::migrate(&pool, config.checked_schema()?)
            .await
            // Say which server: the cause alone ("connection refused") does
            // not tell an operator which setting to check.
            .map_err(|e| e.context(config.server_name()))?;
        if let Ok(client) = pool.get().await {
            tls::describe(&client, &tls, &config.server_name()).await;
        }
        let limits = GroupLimits {
            max_events: config.max_group_events.max(1),
            max_jobs: config.max_group_jobs.max(1),
            max_bytes: config.max_group_bytes.max(1),
            dedup_window: config.dedup_window,
            // Random: nodes need distinct shards, not known ones; two nodes
            // that draw the same one only share rows again.
            usage_shard: rand::random_range(0..USAGE_SHARDS),
        };
        let node = crate::keys::new_id("node");
        let rowless = Arc::new(rowless::Rowless::default());
        let client = pool.get().await.map_err(rows::pool_error)?;
        rowless.start_after(rowless::last_seq(&client).await?);
        drop(client);
        let writer = Writer::spawn(pool.clone(), limits, node.clone(), rowless.clone());
        usage_feed::spawn(pool.clone());
        upkeep::spawn(
            pool.clone(),
            guard,
            config.upkeep_interval,
            config.idle_timeout,
        );
        tracing::info!(
            schema = config.schema.as_deref().unwrap_or("<search_path>"),
            pool_size = config.pool_size,
            "postgres store open"
        );
        Ok(PostgresStore {
            pool: pool.clone(),
            membership,
            node,
            writer,
            rowless,
            vacuum: vacuum::DrainVacuum::new(config.vacuum_after_settled),
            hand_offs: hand_off::HandOffs::spawn(pool, config.dedup_window),
        })
    }

    /// Commits every queued append, stops the writer and closes the pool.
    /// Calls made afterwards fail with [`crate::StoreError::Closed`].
    pub async fn close(&self) {
        self.writer.close().await;
        self.pool.close();
        self.membership.close();
    }

    /// A pooled connection; `Closed` once the store is closed.
    async fn client(&self) -> Result<Object> {
        self.pool.get().await.map_err(rows::pool_error)
    }

    /// A pooled connection for the shared query logic (`crate::queries`).
    async fn db(&self) -> Result<crate::sql::postgres::Pg> {
        self.client().await.map(crate::sql::postgres::Pg)
    }
}
