//! Schema migrations and connection setup.
//!
//! Migrations are append-only: a released `M::up` is never edited, a change
//! is a new entry. The applied version is SQLite's `user_version`, so opening
//! an up-to-date database is one pragma read.

use std::sync::LazyLock;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};
use rusqlite_migration::{M, Migrations};

use super::config::SqliteConfig;
use crate::{Result, StoreError};

/// Version 1. Notes on choices:
/// - `events.seq` and `deliveries.id` are rowids: SQLite assigns max + 1, so
///   they increase. They are cursors and appear in URLs, so they must never
///   be reused: retention never deletes the newest event or the newest
///   delivery's event (see `prune.rs`). This is cheaper on ingest than
///   `AUTOINCREMENT`, which updates `sqlite_sequence` on every insert.
/// - No index on `events.message_id`: message ids are random, and a random
///   index costs ingest more than everything else together. Looking a
///   message up scans (admin only, on a read connection).
/// - `deliveries_due` is partial (pending only): it stays as small as the
///   backlog and serves `claim_due` and `next_due` in index order.
/// - `deliveries_dead` is partial too: free on insert (rows start pending),
///   it serves "list failures" and `replay`.
/// - No foreign keys: integrity is kept by the operations, which keeps the
///   ingest path free of per-row lookups.
const V1: &str = "
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE sources (
    id             TEXT PRIMARY KEY,
    name           TEXT NOT NULL,
    enabled        INTEGER NOT NULL,
    write_key_hash TEXT NOT NULL UNIQUE,
    write_key_hint TEXT NOT NULL,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL
);
CREATE TABLE destinations (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    kind       TEXT NOT NULL,
    enabled    INTEGER NOT NULL,
    settings   TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE TABLE destination_sources (
    destination_id TEXT NOT NULL,
    source_id      TEXT NOT NULL,
    PRIMARY KEY (destination_id, source_id)
) WITHOUT ROWID;
CREATE INDEX destination_sources_source ON destination_sources (source_id);
CREATE TABLE events (
    seq         INTEGER PRIMARY KEY,
    source_id   TEXT NOT NULL,
    message_id  TEXT NOT NULL,
    event_type  TEXT NOT NULL,
    received_at INTEGER NOT NULL,
    body        TEXT NOT NULL
);
CREATE INDEX events_source_seq ON events (source_id, seq);
CREATE INDEX events_received_at ON events (received_at);
CREATE TABLE deliveries (
    id               INTEGER PRIMARY KEY,
    event_seq        INTEGER NOT NULL,
    destination_id   TEXT NOT NULL,
    source_id        TEXT NOT NULL,
    state            TEXT NOT NULL,
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  INTEGER,
    lease_until      INTEGER,
    first_attempt_at INTEGER,
    last_error       TEXT,
    updated_at       INTEGER NOT NULL
);
CREATE INDEX deliveries_due ON deliveries (next_attempt_at, id) WHERE state = 'pending';
CREATE INDEX deliveries_dead ON deliveries (id) WHERE state = 'dead';
CREATE INDEX deliveries_destination ON deliveries (destination_id, id);
CREATE INDEX deliveries_event ON deliveries (event_seq);
CREATE TABLE attempts (
    id          INTEGER PRIMARY KEY,
    delivery_id INTEGER NOT NULL,
    attempt     INTEGER NOT NULL,
    at          INTEGER NOT NULL,
    url         TEXT NOT NULL,
    status      INTEGER,
    error       TEXT,
    latency_ms  INTEGER NOT NULL,
    response    TEXT
);
CREATE INDEX attempts_delivery ON attempts (delivery_id, id);
CREATE TABLE usage (
    source_id TEXT NOT NULL,
    day       TEXT NOT NULL,
    api_calls INTEGER NOT NULL,
    events    INTEGER NOT NULL,
    PRIMARY KEY (source_id, day)
) WITHOUT ROWID;
";

/// Version 2: source schema and filtering (see `crate::source_schema`).
/// - `events.blocked`: the rule that blocked the call, NULL when it passed.
///   Blocked calls are stored (the debugger shows them) but have no
///   deliveries; every consumer of committed events must skip them.
/// - `deliveries.body`: the body this destination gets when its filters
///   dropped fields; NULL means the event's body.
/// - Rules and filters are JSON documents, one row per source/destination.
const V2: &str = "
ALTER TABLE events ADD COLUMN blocked TEXT;
ALTER TABLE deliveries ADD COLUMN body TEXT;
CREATE TABLE usage_blocked (
    source_id TEXT NOT NULL,
    day       TEXT NOT NULL,
    event     TEXT NOT NULL,
    count     INTEGER NOT NULL,
    PRIMARY KEY (source_id, day, event)
) WITHOUT ROWID;
CREATE TABLE source_rules (
    source_id  TEXT PRIMARY KEY,
    rules      TEXT NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE TABLE destination_filters (
    destination_id TEXT PRIMARY KEY,
    filters        TEXT NOT NULL,
    updated_at     INTEGER NOT NULL
);
CREATE TABLE schema_entries (
    source_id  TEXT NOT NULL,
    kind       TEXT NOT NULL,
    name       TEXT NOT NULL,
    property   TEXT NOT NULL,
    types      INTEGER NOT NULL,
    first_seen INTEGER NOT NULL,
    last_seen  INTEGER NOT NULL,
    PRIMARY KEY (source_id, kind, name, property)
) WITHOUT ROWID;
CREATE TABLE schema_volumes (
    source_id TEXT NOT NULL,
    kind      TEXT NOT NULL,
    name      TEXT NOT NULL,
    property  TEXT NOT NULL,
    hour      INTEGER NOT NULL,
    count     INTEGER NOT NULL,
    PRIMARY KEY (source_id, kind, name, property, hour)
) WITHOUT ROWID;
CREATE TABLE schema_overflow (
    source_id TEXT PRIMARY KEY,
    count     INTEGER NOT NULL
);
";

/// Version 3: the profile engine (see `crate::profiles` for the layout).
/// `computations.key` is UNIQUE over deleted rows too: keys are never reused.
const V3: &str = "
CREATE TABLE computations (
    id               TEXT PRIMARY KEY,
    class            TEXT NOT NULL,
    key              TEXT NOT NULL UNIQUE,
    name             TEXT NOT NULL,
    definition       TEXT NOT NULL,
    destination_ids  TEXT NOT NULL,
    revision         INTEGER NOT NULL,
    messages_sent    INTEGER NOT NULL DEFAULT 0,
    last_computed_at INTEGER,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    deleted_at       INTEGER
);
CREATE TABLE profile_jobs (
    id             INTEGER PRIMARY KEY,
    computation_id TEXT NOT NULL,
    kind           TEXT NOT NULL,
    destination_id TEXT,
    after_profile  TEXT NOT NULL DEFAULT ''
);
CREATE TABLE profiles (
    id             TEXT PRIMARY KEY,
    doc            TEXT NOT NULL,
    next_change_at INTEGER
);
CREATE INDEX profiles_next_change ON profiles (next_change_at) WHERE next_change_at IS NOT NULL;
CREATE TABLE profile_identities (
    identity   TEXT PRIMARY KEY,
    profile_id TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX profile_identities_profile ON profile_identities (profile_id);
CREATE TABLE computed_values (
    computation_id TEXT NOT NULL,
    profile_id     TEXT NOT NULL,
    value          TEXT NOT NULL,
    PRIMARY KEY (computation_id, profile_id)
) WITHOUT ROWID;
CREATE INDEX computed_values_profile ON computed_values (profile_id);
CREATE TABLE profile_engine (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    cursor_seq  INTEGER NOT NULL,
    lease_owner TEXT,
    lease_until INTEGER
);
INSERT INTO profile_engine (id, cursor_seq) VALUES (1, 0);
CREATE TABLE computation_sends (
    computation_id TEXT NOT NULL,
    destination_id TEXT NOT NULL,
    sent           INTEGER NOT NULL,
    PRIMARY KEY (computation_id, destination_id)
) WITHOUT ROWID;
";

/// The dashboard's delivery-log filter by messageId (and the admin API's
/// `?message_id=`) selects deliveries whose event has that message_id:
/// without this index that is a scan of every stored event. PostgreSQL has
/// had the same index since its first schema. It depends on V1 only, so it
/// can take any place after it.
const EVENTS_MESSAGE_ID: &str = "
CREATE INDEX IF NOT EXISTS events_message_id ON events (message_id);
";

/// The delivery log filtered by a state few deliveries are in (`filtered`,
/// `discarded`) would otherwise walk the destination's whole index to find
/// them. Partial indexes, like `deliveries_dead`: only rows in that state
/// are indexed, so ingest's inserts of pending deliveries pay nothing.
pub(super) const RARE_STATES: &str = "
CREATE INDEX IF NOT EXISTS deliveries_filtered ON deliveries (id) WHERE state = 'filtered';
CREATE INDEX IF NOT EXISTS deliveries_discarded ON deliveries (id) WHERE state = 'discarded';
";

/// Version 10: no index on `events.received_at`. Its only reader was
/// retention, which now finds old events by seq (events are stored in time
/// order; see `prune::prune_chunk`), and keeping it cost every append
/// a fourth B-tree insert: without it batch ingest took 7 % less CPU per
/// event and ran 7-8 % faster, and each event takes about 17 bytes less
/// (BENCHMARKS.md, "Measured choices").
const NO_RECEIVED_AT_INDEX: &str = "
DROP INDEX IF EXISTS events_received_at;
";

/// Version 11: no index on `events.message_id` either. Its random keys cost
/// each append an insert at a random place in a B-tree that grows with the
/// table (5-10 % of batch ingest; BENCHMARKS.md, "Measured choices"). Its
/// readers, the delivery log's messageId filter and the admin API's, now
/// find events through a bloom filter per block of seqs (see
/// `message_ids`); the filters of existing events are built at open.
const MESSAGE_ID_BLOOMS: &str = "
DROP INDEX IF EXISTS events_message_id;
CREATE TABLE event_blooms (
    block INTEGER PRIMARY KEY,
    bits  BLOB NOT NULL
);
";

/// Version 12: event bodies may be compressed blobs (see `bodies`), and a
/// delivery's `source_id` may be `''`, meaning its event's source (see
/// `queries::deliveries::RECORD_COLUMNS`). No row changes: older rows read as
/// before. The version exists so that a Sluice older than these formats
/// refuses the database ("too far ahead") instead of misreading it.
///
/// Also: no index on `events (source_id, seq)`. A source's recent events are
/// found through the list of sources kept per block of seqs (see
/// `source_blocks`), built for existing events at open.
const COMPRESSED_BODIES: &str = "
DROP INDEX IF EXISTS events_source_seq;
CREATE TABLE event_block_sources (
    block   INTEGER PRIMARY KEY,
    sources TEXT NOT NULL
);
INSERT OR REPLACE INTO meta (key, value) VALUES ('event_body_format', 'lz4-dictionary-v1');
";

/// Version 13: attempts keyed by their delivery. The table was a rowid
/// table plus an index on `(delivery_id, id)`, and its only readers look
/// attempts up by delivery: every reported attempt cost two B-tree inserts
/// and about 22 bytes for the index and the rowid (BENCHMARKS.md,
/// "Measured choices"). Now the rows live in one B-tree keyed by `(delivery_id, n)`, `n`
/// counting a delivery's attempts from 1 in the order they were written;
/// the migration numbers existing rows in their old `id` order.
const ATTEMPTS_BY_DELIVERY: &str = "
CREATE TABLE attempts_by_delivery (
    delivery_id INTEGER NOT NULL,
    n           INTEGER NOT NULL,
    attempt     INTEGER NOT NULL,
    at          INTEGER NOT NULL,
    url         TEXT NOT NULL,
    status      INTEGER,
    error       TEXT,
    latency_ms  INTEGER NOT NULL,
    response    TEXT,
    PRIMARY KEY (delivery_id, n)
) WITHOUT ROWID;
INSERT INTO attempts_by_delivery
    (delivery_id, n, attempt, at, url, status, error, latency_ms, response)
SELECT delivery_id, row_number() OVER (PARTITION BY delivery_id ORDER BY id),
       attempt, at, url, status, error, latency_ms, response
FROM attempts;
DROP TABLE attempts;
ALTER TABLE attempts_by_delivery RENAME TO attempts;
";

/// Version 16: signed-out dashboard sessions, kept until their cookie
/// would have expired, so that a sign-out survives a restart.
const REVOKED_SESSIONS: &str = "
CREATE TABLE revoked_sessions (
    id         TEXT PRIMARY KEY,
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;
";

/// Version 23: a delivery settled by its first round of attempts keeps
/// them in its row (`crate::settled`), not in `attempts`.
const SETTLED_ATTEMPTS: &str = "ALTER TABLE deliveries ADD COLUMN settled_attempts TEXT;";

/// Version 24: usage read through the view PostgreSQL also has, where it
/// adds the calls not yet counted into `usage` (`postgres/usage_feed.rs`).
const USAGE_DAYS: &str = "
CREATE VIEW usage_days AS
SELECT source_id, day, api_calls, events, duplicates FROM usage;
";

/// Every migration, oldest first.
pub(super) static MIGRATIONS: LazyLock<Migrations<'static>> = LazyLock::new(|| {
    Migrations::new(vec![
        M::up(V1),
        M::up(V2),
        M::up(V3),
        M::up(super::regulations::SCHEMA),
        M::up(super::regulations::SCHEMA_V5),
        M::up(EVENTS_MESSAGE_ID),
        M::up(RARE_STATES),
        M::up(super::profiles::events::SCHEMA_V8),
        M::up(super::profiles::scheduled::SCHEMA_V9),
        M::up(NO_RECEIVED_AT_INDEX),
        M::up(MESSAGE_ID_BLOOMS),
        M::up(COMPRESSED_BODIES),
        M::up(ATTEMPTS_BY_DELIVERY),
        M::up(super::profiles::events::SCHEMA_V14),
        M::up(super::regulations::NOTIFICATION_SOURCES),
        M::up(REVOKED_SESSIONS),
        M::up(super::dedup::SCHEMA_DUPLICATES),
        M::up(super::team::SCHEMA),
        M::up(super::profiles::catalog::SCHEMA_CHANGES),
        M::up(super::health::SCHEMA),
        M::up(super::seen::SCHEMA),
        M::up(super::tally::SCHEMA),
        M::up(SETTLED_ATTEMPTS),
        M::up(USAGE_DAYS),
    ])
});

/// Prepared statements kept per connection; covers every hot statement.
const STATEMENT_CACHE: usize = 96;

/// Opens the single read-write connection: WAL, the configured durability,
/// and the schema brought up to date. A 16 MiB page cache holds a full group
/// commit (8192 events of about 1.4 KB) with little to spare; 64 MiB cost
/// 48 MB more resident memory once the profile engine's random inserts
/// filled it, for no throughput measurable above the noise (interleaved
/// `sluice-bench --only ingest`, engine off: batch 78.7k against 72.5k ev/s,
/// track 11.1k against 10.6k, runs of one binary 20 % apart; BENCHMARKS.md,
/// "Measured choices"). Auto-checkpoint is only a safety net behind the
/// checkpoint thread (16384 pages, 64 MiB). `secure_delete` (on unless configured off) zeroes what
/// updates and deletes free, so a purged user leaves no stale copy in free
/// space (`docs/privacy.md`, and `scrub` for what it misses); ingest only
/// inserts, so it costs ingest nothing.
pub(super) fn open_writer(config: &SqliteConfig) -> Result<Connection> {
    let mut conn = Connection::open(&config.path)?;
    conn.busy_timeout(config.busy_timeout)?;
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError::backend(
            crate::error::ErrorKind::Config,
            format!("cannot enable WAL (journal_mode is {mode})"),
        ));
    }
    conn.execute_batch(&format!(
        "PRAGMA synchronous = {};
         PRAGMA foreign_keys = OFF;
         PRAGMA temp_store = MEMORY;
         PRAGMA secure_delete = {};
         PRAGMA cache_size = -16384;
         PRAGMA wal_autocheckpoint = 16384;
         PRAGMA journal_size_limit = 67108864;",
        config.synchronous.pragma_value(),
        if config.secure_delete { "ON" } else { "OFF" },
    ))?;
    MIGRATIONS
        .to_latest(&mut conn)
        .map_err(|e| StoreError::caused(crate::error::ErrorKind::Schema, "migration", e))?;
    super::message_ids::catch_up(&mut conn)?;
    super::bodies::register(&conn)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    Ok(conn)
}

/// Opens the checkpoint thread's connection (read-write: it writes the
/// database file, never rows).
pub(super) fn open_checkpointer(config: &SqliteConfig) -> Result<Connection> {
    let conn = Connection::open(&config.path)?;
    conn.busy_timeout(config.busy_timeout)?;
    conn.execute_batch(&format!(
        "PRAGMA synchronous = {};",
        config.synchronous.pragma_value()
    ))?;
    Ok(conn)
}

/// Opens one read-only connection. The writer must have created the database
/// (and its WAL index) first. Its page cache is 512 KiB, not SQLite's 2 MB:
/// reads are mostly long sequential passes (the profile engine's, exports)
/// that the OS page cache serves as well, and four readers' full default
/// caches were 8 MB of the whole-population personas peak (it fell from
/// 120 to 112 MB; BENCHMARKS.md, "Measured choices").
pub(super) fn open_reader(path: &std::path::Path, busy_timeout: Duration) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(busy_timeout)?;
    conn.execute_batch("PRAGMA cache_size = -512;")?;
    super::bodies::register(&conn)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    Ok(conn)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempts_keep_their_order_per_delivery_across_version_13() {
        let mut conn = Connection::open_in_memory().unwrap();
        MIGRATIONS.to_version(&mut conn, 12).unwrap();
        // Two deliveries' attempts, interleaved as retries write them.
        for (delivery, attempt) in [(7, 1), (9, 1), (7, 2), (9, 2), (7, 3)] {
            conn.execute(
                "INSERT INTO attempts (delivery_id, attempt, at, url, status, latency_ms)
                 VALUES (?1, ?2, 0, 'https://example.com/', 503, 1)",
                [delivery, attempt],
            )
            .unwrap();
        }
        MIGRATIONS.to_latest(&mut conn).unwrap();
        let rows: Vec<(i64, i64, i64)> = conn
            .prepare("SELECT delivery_id, n, attempt FROM attempts ORDER BY delivery_id, n")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(
            rows,
            [(7, 1, 1), (7, 2, 2), (7, 3, 3), (9, 1, 1), (9, 2, 2)]
        );
    }

    #[test]
    fn migrations_are_valid() {
        assert!(MIGRATIONS.validate().is_ok());
    }
}
