//! Versioned migrations and the connection pool.
//!
//! Migrations are append-only: a released entry of [`MIGRATIONS`] is never
//! edited; a change is a new entry. Applied versions are rows of
//! `schema_migrations`. All pending migrations run in ONE transaction that
//! first takes a transaction-scoped advisory lock, so nodes starting together
//! queue behind each other: the first applies, the others then find nothing
//! to do. PostgreSQL DDL is transactional, so a failed migration leaves no
//! trace.

use std::sync::Arc;

use deadpool_postgres::{
    Hook, HookError, Manager, ManagerConfig, Pool, QueueMode, RecyclingMethod, Runtime,
};

use super::config::PostgresConfig;
use super::rows::{backend, get, pool_error};
use super::tls::TlsParams;
use super::upkeep::SchemaGuard;
use crate::error::ErrorKind;
use crate::{Result, StoreError};

/// Version 1. Notes on choices:
/// - Times are `bigint` unix milliseconds, as in the SQLite backend.
/// - `events.body` is `text`, not `jsonb`: the body must come back byte for
///   byte (signatures are computed over it); `jsonb` reorders keys.
/// - `events.seq` draws from a named sequence so the writer can reserve a
///   block of seqs for a group in one round trip; sequences never hand out a
///   value twice, so cursors in URLs are never reused after retention.
/// - `deliveries_due` is partial (pending only): it stays as small as the
///   backlog and serves `claim_due` and `next_due` in index order.
/// - Ids and days are `COLLATE "C"`: byte order, as Rust sorts, whatever
///   the database's locale (and cheaper to compare).
/// - No foreign keys: integrity is kept by the operations, which keeps the
///   ingest path free of per-row lookups (same as SQLite).
const V1: &str = r#"
CREATE TABLE meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);
CREATE TABLE sources (
    id             text COLLATE "C" PRIMARY KEY,
    name           text NOT NULL,
    enabled        boolean NOT NULL,
    write_key_hash text NOT NULL UNIQUE,
    write_key_hint text NOT NULL,
    created_at     bigint NOT NULL,
    updated_at     bigint NOT NULL
);
CREATE TABLE destinations (
    id         text COLLATE "C" PRIMARY KEY,
    name       text NOT NULL,
    kind       text NOT NULL,
    enabled    boolean NOT NULL,
    settings   text NOT NULL,
    created_at bigint NOT NULL,
    updated_at bigint NOT NULL
);
CREATE TABLE destination_sources (
    destination_id text COLLATE "C" NOT NULL,
    source_id      text COLLATE "C" NOT NULL,
    PRIMARY KEY (destination_id, source_id)
);
CREATE INDEX destination_sources_source ON destination_sources (source_id);
CREATE SEQUENCE events_seq;
CREATE TABLE events (
    seq         bigint PRIMARY KEY DEFAULT nextval('events_seq'),
    source_id   text COLLATE "C" NOT NULL,
    message_id  text COLLATE "C" NOT NULL,
    event_type  text NOT NULL,
    received_at bigint NOT NULL,
    body        text NOT NULL
);
ALTER SEQUENCE events_seq OWNED BY events.seq;
CREATE INDEX events_source_seq ON events (source_id, seq);
CREATE INDEX events_message_id ON events (message_id);
CREATE INDEX events_received_at ON events (received_at);
CREATE TABLE deliveries (
    id               bigserial PRIMARY KEY,
    event_seq        bigint NOT NULL,
    destination_id   text COLLATE "C" NOT NULL,
    source_id        text COLLATE "C" NOT NULL,
    state            text NOT NULL,
    attempts         bigint NOT NULL DEFAULT 0,
    next_attempt_at  bigint,
    lease_until      bigint,
    first_attempt_at bigint,
    last_error       text,
    updated_at       bigint NOT NULL
);
CREATE INDEX deliveries_due ON deliveries (next_attempt_at, id) WHERE state = 'pending';
CREATE INDEX deliveries_dead ON deliveries (id) WHERE state = 'dead';
CREATE INDEX deliveries_destination ON deliveries (destination_id, id);
CREATE INDEX deliveries_event ON deliveries (event_seq);
CREATE TABLE attempts (
    id          bigserial PRIMARY KEY,
    delivery_id bigint NOT NULL,
    attempt     bigint NOT NULL,
    at          bigint NOT NULL,
    url         text NOT NULL,
    status      integer,
    error       text,
    latency_ms  bigint NOT NULL,
    response    text
);
CREATE INDEX attempts_delivery ON attempts (delivery_id, id);
CREATE TABLE usage (
    source_id text COLLATE "C" NOT NULL,
    day       text COLLATE "C" NOT NULL,
    api_calls bigint NOT NULL,
    events    bigint NOT NULL,
    PRIMARY KEY (source_id, day)
);
"#;

/// Version 14: usage counters get a row per node (`shard`), so ingest
/// transactions of different nodes never update the same row; reads sum
/// the shards. Existing counts become shard 0.
const USAGE_SHARDS: &str = r#"
ALTER TABLE usage ADD COLUMN shard integer NOT NULL DEFAULT 0;
ALTER TABLE usage DROP CONSTRAINT usage_pkey;
ALTER TABLE usage ADD PRIMARY KEY (source_id, day, shard);
ALTER TABLE usage_blocked ADD COLUMN shard integer NOT NULL DEFAULT 0;
ALTER TABLE usage_blocked DROP CONSTRAINT usage_blocked_pkey;
ALTER TABLE usage_blocked ADD PRIMARY KEY (source_id, day, event, shard);
"#;

/// Version 2: source schema and filtering (see `crate::source_schema`).
/// - `events.blocked`: the rule that blocked the call, NULL when it passed.
///   Blocked calls are stored (the debugger shows them) but have no
///   deliveries; every consumer of committed events must skip them.
/// - `deliveries.body`: the body this destination gets when its filters
///   dropped fields; NULL means the event's body.
const V2: &str = r#"
ALTER TABLE events ADD COLUMN blocked text;
ALTER TABLE deliveries ADD COLUMN body text;
CREATE TABLE usage_blocked (
    source_id text COLLATE "C" NOT NULL,
    day       text COLLATE "C" NOT NULL,
    event     text COLLATE "C" NOT NULL,
    count     bigint NOT NULL,
    PRIMARY KEY (source_id, day, event)
);
CREATE TABLE source_rules (
    source_id  text COLLATE "C" PRIMARY KEY,
    rules      text NOT NULL,
    updated_at bigint NOT NULL
);
CREATE TABLE destination_filters (
    destination_id text COLLATE "C" PRIMARY KEY,
    filters        text NOT NULL,
    updated_at     bigint NOT NULL
);
CREATE TABLE schema_entries (
    source_id  text COLLATE "C" NOT NULL,
    kind       text COLLATE "C" NOT NULL,
    name       text COLLATE "C" NOT NULL,
    property   text COLLATE "C" NOT NULL,
    types      bigint NOT NULL,
    first_seen bigint NOT NULL,
    last_seen  bigint NOT NULL,
    PRIMARY KEY (source_id, kind, name, property)
);
CREATE TABLE schema_volumes (
    source_id text COLLATE "C" NOT NULL,
    kind      text COLLATE "C" NOT NULL,
    name      text COLLATE "C" NOT NULL,
    property  text COLLATE "C" NOT NULL,
    hour      bigint NOT NULL,
    count     bigint NOT NULL,
    PRIMARY KEY (source_id, kind, name, property, hour)
);
CREATE TABLE schema_overflow (
    source_id text COLLATE "C" PRIMARY KEY,
    count     bigint NOT NULL
);
"#;

/// Version 3: the profile engine (layout in `crate::profiles`).
/// - `events.xact` is the writing transaction's id, filled by a column
///   default (ingest is unchanged). Seqs are drawn before commit, so they can
///   commit out of order; the engine instead reads `(xact, seq)` order below
///   the oldest running transaction (`pg_snapshot_xmin`), which is final:
///   no event can appear there later. Adding the column rewrites `events`
///   once on upgrade (a volatile default), in time proportional to its size.
/// - `computations.key` is UNIQUE over deleted rows too: keys are never
///   reused.
const V3: &str = r#"
ALTER TABLE events ADD COLUMN xact bigint NOT NULL DEFAULT (pg_current_xact_id()::text::bigint);
CREATE INDEX events_xact_seq ON events (xact, seq);
CREATE TABLE computations (
    id               text COLLATE "C" PRIMARY KEY,
    class            text NOT NULL,
    key              text COLLATE "C" NOT NULL UNIQUE,
    name             text NOT NULL,
    definition       text NOT NULL,
    destination_ids  text NOT NULL,
    revision         bigint NOT NULL,
    messages_sent    bigint NOT NULL DEFAULT 0,
    last_computed_at bigint,
    created_at       bigint NOT NULL,
    updated_at       bigint NOT NULL,
    deleted_at       bigint
);
CREATE TABLE profile_jobs (
    id             bigserial PRIMARY KEY,
    computation_id text COLLATE "C" NOT NULL,
    kind           text NOT NULL,
    destination_id text COLLATE "C",
    after_profile  text COLLATE "C" NOT NULL DEFAULT ''
);
CREATE TABLE profiles (
    id             text COLLATE "C" PRIMARY KEY,
    doc            text NOT NULL,
    next_change_at bigint
);
CREATE INDEX profiles_next_change ON profiles (next_change_at) WHERE next_change_at IS NOT NULL;
CREATE TABLE profile_identities (
    identity   text COLLATE "C" PRIMARY KEY,
    profile_id text COLLATE "C" NOT NULL
);
CREATE INDEX profile_identities_profile ON profile_identities (profile_id);
CREATE TABLE computed_values (
    computation_id text COLLATE "C" NOT NULL,
    profile_id     text COLLATE "C" NOT NULL,
    value          text NOT NULL,
    PRIMARY KEY (computation_id, profile_id)
);
CREATE INDEX computed_values_profile ON computed_values (profile_id);
CREATE TABLE profile_engine (
    id          integer PRIMARY KEY CHECK (id = 1),
    cursor_xact bigint NOT NULL,
    cursor_seq  bigint NOT NULL,
    lease_owner text,
    lease_until bigint
);
INSERT INTO profile_engine (id, cursor_xact, cursor_seq) VALUES (1, 0, 0);
CREATE TABLE computation_sends (
    computation_id text COLLATE "C" NOT NULL,
    destination_id text COLLATE "C" NOT NULL,
    sent           bigint NOT NULL,
    PRIMARY KEY (computation_id, destination_id)
);
"#;

/// The delivery log filtered by a state few deliveries are in: partial
/// indexes, so only rows in that state are indexed (as `deliveries_dead`).
const RARE_STATES: &str = r#"
CREATE INDEX IF NOT EXISTS deliveries_filtered ON deliveries (id) WHERE state = 'filtered';
CREATE INDEX IF NOT EXISTS deliveries_discarded ON deliveries (id) WHERE state = 'discarded';
"#;

/// Signed-out dashboard sessions, kept until their cookie would have
/// expired: a sign-out holds on every node and across restarts.
const REVOKED_SESSIONS: &str = r#"
CREATE TABLE revoked_sessions (
    id         text COLLATE "C" PRIMARY KEY,
    expires_at bigint NOT NULL
);
"#;

/// Every migration, oldest first; version `n` is entry `n - 1`.
const MIGRATIONS: &[(&str, &str)] = &[
    ("initial schema", V1),
    ("source schema", V2),
    ("profile engine", V3),
    ("regulations", super::regulations::SCHEMA),
    ("regulation errors", super::regulations::SCHEMA_V5),
    ("delivery log by rare state", RARE_STATES),
    ("profile events", super::profiles::events::SCHEMA_V7),
    ("scheduled changes", super::profiles::scheduled::SCHEMA_V8),
    (
        "profile event message ids",
        super::profiles::events::SCHEMA_V9,
    ),
    (
        "notification sources",
        super::regulations::NOTIFICATION_SOURCES,
    ),
    ("node membership", super::cluster::SCHEMA),
    ("revoked dashboard sessions", REVOKED_SESSIONS),
    ("message id deduplication", super::dedup::SCHEMA),
    ("usage counters per node", USAGE_SHARDS),
    ("delivery lease owners", super::cluster::LEASE_OWNER),
    ("users, API tokens and the audit log", super::team::SCHEMA),
    (
        "definition changes",
        super::profiles::catalog::SCHEMA_CHANGES,
    ),
    (
        "profile engine partitions",
        super::profiles::partitions::SCHEMA_PARTITIONS,
    ),
    ("delivery health", super::health::SCHEMA),
    ("message id keys", super::dedup::SCHEMA_KEYS),
    ("saved event log keys", super::seen::SCHEMA),
    ("deduplication in events", super::dedup::SCHEMA_IN_EVENTS),
    ("usage counted from the event log", super::tally::SCHEMA),
    (
        "profile engine positions in the event log",
        super::profiles::partitions::SCHEMA_LOG,
    ),
    ("room for delivery claims in their pages", DELIVERY_ROOM),
    (
        "first rounds of attempts in their deliveries",
        SETTLED_ATTEMPTS,
    ),
    ("deliveries handed without a row", super::rowless::SCHEMA),
    ("usage counted from the events", super::usage_feed::SCHEMA),
];

/// Version 25: each page of `deliveries` keeps half its space free, so that
/// a claim, which changes no indexed column, writes the row's new version
/// in the same page: a heap-only update, with no new index entry. Claims
/// take a page's rows together (they are due in the order they were
/// stored), hence half. Pages written before keep their old setting.
const DELIVERY_ROOM: &str = "ALTER TABLE deliveries SET (fillfactor = 50);";

/// Version 26: a delivery settled by its first round of attempts keeps
/// them in its row (`crate::settled`), not in `attempts`.
const SETTLED_ATTEMPTS: &str = "ALTER TABLE deliveries ADD COLUMN settled_attempts text;";

/// First key of the migration advisory lock ("SLUI"); the second is a hash
/// of the schema, so separate schemas migrate independently.
const MIGRATION_LOCK: i32 = 0x534c_5549;

/// The pool, with what was decided in building it.
pub(super) struct Opened {
    pub(super) pool: Pool,
    pub(super) tls: TlsParams,
}

/// A guard that refuses a pool's connections once the schema is newer than
/// [`MIGRATIONS`] (see `upkeep.rs`); every pool of a store shares one.
pub(super) fn guard() -> SchemaGuard {
    SchemaGuard::new(i32::try_from(MIGRATIONS.len()).unwrap_or(i32::MAX))
}

/// Builds a pool of at most `size` connections. Connections are made lazily; each one sets its
/// `search_path` to the configured schema first thing. A `SET` rather than
/// the `options` startup parameter, which poolers such as PgBouncer refuse.
pub(super) fn pool(config: &PostgresConfig, size: usize, guard: &SchemaGuard) -> Result<Opened> {
    let (conn, tls) = super::tls::split(&config.url)
        .map_err(|e| StoreError::backend(ErrorKind::Config, format!("postgres URL: {e}")))?;
    let mut pg: tokio_postgres::Config = conn
        .parse()
        .map_err(|e| StoreError::backend(ErrorKind::Config, format!("postgres URL: {e}")))?;
    pg.ssl_mode(super::tls::negotiated(tls.mode));
    let search_path: Option<Arc<str>> = config
        .checked_schema()?
        .map(|schema| format!("SET search_path TO {schema}").into());
    if pg.get_application_name().is_none() {
        pg.application_name("sluice");
    }
    pg.connect_timeout(config.connect_timeout);
    let manager = Manager::from_config(
        pg,
        super::tls::connector(&tls)?,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    let (on_create, on_recycle) = (guard.clone(), guard.clone());
    Pool::builder(manager)
        .post_create(Hook::async_fn(move |client, _| {
            let (guard, set) = (on_create.clone(), search_path.clone());
            Box::pin(async move {
                guard.check()?;
                if let Some(set) = set {
                    client
                        .batch_execute(&set)
                        .await
                        .map_err(HookError::Backend)?;
                }
                Ok(())
            })
        }))
        .pre_recycle(Hook::sync_fn(move |_, _| on_recycle.check()))
        .max_size(size.max(1))
        // The connection used last is handed out first, so work keeps a
        // few connections warm and the rest age out (see `upkeep.rs`);
        // first-in-first-out would touch every one in turn and keep all.
        .queue_mode(QueueMode::Lifo)
        .runtime(Runtime::Tokio1)
        .wait_timeout(Some(config.connect_timeout))
        .create_timeout(Some(config.connect_timeout))
        .build()
        .map(|pool| Opened { pool, tls })
        .map_err(|e| StoreError::backend(ErrorKind::Config, format!("postgres pool: {e}")))
}

/// Brings the schema up to date. Refuses a database migrated by a newer
/// Sluice: running old code on a new schema could corrupt it.
pub(super) async fn migrate(pool: &Pool, schema: Option<&str>) -> Result<()> {
    let mut client = pool.get().await.map_err(pool_error)?;
    let tx = client.transaction().await.map_err(backend)?;
    match apply_pending(&tx, schema).await {
        Ok(()) => tx.commit().await.map_err(backend),
        Err(e) => {
            // Roll back now rather than on drop, which only queues the
            // ROLLBACK: the advisory lock must not outlive this call.
            if let Err(rollback) = tx.rollback().await {
                tracing::warn!(error = %rollback, "rolling back a failed migration");
            }
            Err(e)
        }
    }
}

async fn apply_pending(
    tx: &deadpool_postgres::Transaction<'_>,
    schema: Option<&str>,
) -> Result<()> {
    let lock_name = schema.unwrap_or("<search_path>");
    tx.execute(
        "SELECT pg_advisory_xact_lock($1, hashtext($2))",
        &[&MIGRATION_LOCK, &lock_name],
    )
    .await
    .map_err(backend)?;
    if let Some(schema) = schema {
        // The name was checked by `PostgresConfig::checked_schema`.
        tx.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {schema}"))
            .await
            .map_err(backend)?;
    }
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (
             version    integer PRIMARY KEY,
             name       text NOT NULL,
             applied_at timestamptz NOT NULL DEFAULT now()
         )",
    )
    .await
    .map_err(backend)?;
    let row = tx
        .query_one(
            "SELECT COALESCE(max(version), 0) FROM schema_migrations",
            &[],
        )
        .await
        .map_err(backend)?;
    let current: i32 = get(&row, 0)?;
    let known = i32::try_from(MIGRATIONS.len()).unwrap_or(i32::MAX);
    if current > known {
        return Err(StoreError::backend(
            ErrorKind::Schema,
            format!(
                "database schema is at version {current}, newer than this Sluice knows ({known}); \
             upgrade Sluice"
            ),
        ));
    }
    let applied = usize::try_from(current).unwrap_or(0);
    for (version, (name, sql)) in (1..).zip(MIGRATIONS.iter()).skip(applied) {
        tx.batch_execute(sql).await.map_err(backend)?;
        tx.execute(
            "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
            &[&version, name],
        )
        .await
        .map_err(backend)?;
        tracing::info!(version, name, "postgres migration applied");
    }
    Ok(())
}
