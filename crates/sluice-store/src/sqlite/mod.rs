//! The embedded SQLite backend: zero setup, one node, one file.
//!
//! # Invariants
//! - **Commit before answer.** Every write, `append` included, returns only
//!   after its transaction has committed. With `synchronous = FULL` (the
//!   default) the commit is fsynced: acknowledged events survive power loss.
//!   With `NORMAL` they survive a process crash or `kill -9` (the WAL frames
//!   are in the OS page cache) but the last commits may roll back on power
//!   loss. See [`Synchronous`].
//! - **Outbox.** One `append` writes its events, one pending delivery per
//!   (event, destination) due at `received_at`, and the source's usage
//!   counters for that UTC day, in one transaction.
//! - **Single writer.** One thread owns the only read-write connection; every
//!   write goes through it (see `writer.rs`). Concurrent calls are folded into
//!   one transaction (group commit) under savepoints, so a failing call
//!   never makes another one's writes half-committed: an administrative
//!   write fails alone; a failing append (only possible when the database
//!   itself fails) also fails the appends that ran before it in its group,
//!   which nobody had been told were stored.
//! - **Snapshot reads.** Reads use a small pool of read-only connections on
//!   tokio's blocking pool; WAL lets them run beside the writer, each read on
//!   one consistent snapshot.
//! - **Leases, not locks.** `claim_due` stamps `lease_until`; a delivery whose
//!   worker died is handed out again once its lease ends.
//! - **Delivered without a claim.** An append writes its deliveries already
//!   leased to the engine, as many as the engine has room for, and hands
//!   them over once the group commits ([`crate::local`]); a process that
//!   dies first leaves them leased, and the next open releases them.
//! - **Ids only grow.** Event seqs and delivery ids are rowids (max + 1);
//!   retention never deletes the newest event or the newest delivery, and
//!   purges and withdrawn messages leave the newest as a tombstone
//!   (`tombstones.rs`), so no id is ever handed out twice.
//! - **Retention in slices.** `prune` deletes in transactions of a few
//!   thousand events, so it never holds the writer (and ingest) for long.
//!   It finds old events by seq, not by an index on `received_at` (events
//!   are stored in time order; see `prune::prune_chunk`).
//!
//! # On-disk layout
//! - `<path>`: the database, mode `0600` on unix (it holds destination
//!   secrets). Tables: `meta`, `sources`, `destinations`,
//!   `destination_sources`, `events`, `event_blooms` (message ids by block
//!   of seqs, see `message_ids`), `event_block_sources` (the sources in each
//!   block, see `source_blocks`), `deliveries` (with the attempts of a
//!   round that settled them, see `crate::settled`), `attempts` (the
//!   other rounds, keyed by delivery), `usage`,
//!   and the profile engine's `computations`, `profile_jobs`, `profiles`,
//!   `profile_identities`, `computed_values`, `computation_sends`,
//!   `profile_engine` (see `schema.rs` and [`crate::profiles`]), and the
//!   team's `users`, `api_tokens`, `user_sessions` and `audit_log` (see
//!   `team.rs`, [`crate::team`] and [`crate::audit`]). Times are integer unix milliseconds, UTC.
//!   Event bodies and the profile engine's copies of call properties are
//!   JSON text or LZ4 blobs against a built-in dictionary (`bodies`); SQL
//!   reads them through `body_json(body)`.
//! - `<path>.lock`: empty; the running process holds an exclusive `flock`
//!   on it (`lock.rs`).
//! - `<path>-wal`, `<path>-shm`: SQLite's write-ahead log and its index,
//!   created by SQLite with the database's permissions. A background thread
//!   checkpoints the WAL into the database after commits (see
//!   `checkpoint.rs`), keeping that work and its fsync off the writer, and
//!   truncates the WAL file once the store has been idle for half a second.
//! - The schema version is SQLite's `user_version`; migrations run at open.
//!
//! # Recovery
//! Nothing to do by hand: on open SQLite keeps committed WAL frames and
//! drops uncommitted ones, so the database holds every acknowledged write
//! (plus, possibly, a last group that committed but whose callers died before
//! hearing back: a client retry then stores a duplicate, which Segment's
//! at-least-once contract allows). Only one process opens a database at a
//! time (`lock.rs`), so the leases the previous process held (deliveries it
//! had claimed, the profile engine's, the regulation job's) are freed at
//! open and its work resumes at once. [`SqliteStore::close`]
//! drains queued writes before stopping; dropping the store without closing
//! lets the writer thread finish queued jobs on its own.
//!
//! # Backups
//! [`backup`] copies the database online, in one read transaction, to a
//! new file (`backup.rs` has its invariants).

mod audit;
mod backup;
mod bodies;
mod checkpoint;
mod cluster;
mod config;
mod dedup;
mod delivery;
mod health;
mod ingest;
mod lock;
mod message_ids;
mod pool;
pub(crate) mod profiles;
mod prune;
mod regulations;
pub(crate) mod rows;
mod schema;
mod scrub;
mod seen;
mod source_blocks;
mod source_schema;
mod store_impl;
mod tally;
mod team;
mod tombstones;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use backup::{BackupError, BackupReport, backup};
pub use config::{SqliteConfig, Synchronous};
pub use scrub::Scrubbed;

use crate::{Result, StoreError};
use checkpoint::Checkpointer;
use pool::ReadPool;
use writer::{GroupLimits, Writer};

/// The SQLite implementation of [`crate::Store`].
pub struct SqliteStore {
    writer: Writer,
    /// The message-id window (`dedup`); `None` when deduplication is off.
    window: Option<dedup::Shared>,
    /// The window's hash, for keys made before a job reaches the writer.
    keyer: Option<dedup::Keyer>,
    readers: Arc<ReadPool>,
    path: PathBuf,
    /// Whether purges end by zeroing free space (`scrub`).
    secure_delete: bool,
    /// The delivery engine that takes deliveries from ingest, once it does
    /// ([`crate::local`]).
    local: std::sync::OnceLock<Arc<crate::local::LocalDelivery>>,
}

impl SqliteStore {
    /// Opens (creating when missing) the database at `config.path`, applies
    /// pending migrations and starts the writer thread.
    pub async fn open(config: SqliteConfig) -> Result<SqliteStore> {
        let opened = tokio::task::spawn_blocking(move || -> Result<_> {
            prepare_file(&config.path)?;
            let lock = lock::acquire(&config.path, config.lock_wait)?;
            let conn = schema::open_writer(&config)?;
            lock::release_dead_leases(&conn)?;
            let window = match config.dedup_window {
                Some(span) => {
                    // Read on a connection of its own: the pass over the
                    // window's events would otherwise fill the writer's
                    // page cache with pages ingest never needs.
                    let reader = schema::open_reader(&config.path, config.busy_timeout)?;
                    let now = rows::ms(chrono::Utc::now());
                    let window = dedup::restore(&reader, &config.path, span, now)?;
                    Some(Arc::new(std::sync::Mutex::new(window)))
                }
                None => {
                    // A window saved while deduplication was on would be
                    // stale by the time it is turned on again.
                    let _ = std::fs::remove_file(dedup::saved_path(&config.path));
                    None
                }
            };
            let checkpoint_conn = schema::open_checkpointer(&config)?;
            Ok((lock, conn, checkpoint_conn, config, window))
        })
        .await
        .map_err(|e| StoreError::internal(format!("open task: {e}")))??;
        let (lock, conn, checkpoint_conn, config, window) = opened;
        let limits = GroupLimits {
            max_weight: config.max_group_events.max(1),
            max_jobs: config.max_group_jobs.max(1),
        };
        let checkpointer = Checkpointer::spawn(checkpoint_conn, &config)?;
        let writer = Writer::spawn(conn, checkpointer, limits, lock, window.clone())?;
        let readers = Arc::new(ReadPool::new(
            config.path.clone(),
            config.busy_timeout,
            config.read_connections,
        ));
        tracing::info!(path = %config.path.display(), "sqlite store open");
        let keyer = window.as_ref().map(|w| dedup::lock(w).keyer());
        Ok(SqliteStore {
            writer,
            window,
            keyer,
            readers,
            path: config.path,
            secure_delete: config.secure_delete,
            local: std::sync::OnceLock::new(),
        })
    }

    /// How many message ids the deduplication window holds, and the bytes
    /// its tables take (`(0, 0)` when deduplication is off).
    pub fn dedup_window_size(&self) -> (usize, usize) {
        self.window.as_ref().map_or((0, 0), |w| {
            let w = dedup::lock(w);
            (w.len(), w.bytes())
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Commits every queued write, stops the writer and closes connections.
    /// Calls made afterwards fail with [`StoreError::Closed`].
    /// With deduplication on, the window is saved beside the database, so
    /// the next open need not read every event of it again.
    pub async fn close(&self) {
        self.writer.close().await;
        self.readers.close();
        let Some(window) = self.window.clone() else {
            return;
        };
        let path = self.path.clone();
        let saved = tokio::task::spawn_blocking(move || -> Result<()> {
            let conn = rusqlite::Connection::open_with_flags(
                &path,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY
                    | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )?;
            dedup::save(&conn, &path, &dedup::lock(&window))
        })
        .await;
        match saved {
            Ok(Ok(())) => {}
            // The next open rebuilds the window from the events instead.
            Ok(Err(e)) => tracing::warn!(error = %e, "message-id window not saved"),
            Err(e) => tracing::warn!(error = %e, "message-id window not saved"),
        }
    }
}

/// Installs the store's SQL functions on a connection opened outside it (a
/// test's, or a tool reading a copy of the database): `body_json(body)`
/// turns a stored event body, text or compressed blob, into its JSON.
pub fn register_functions(conn: &rusqlite::Connection) -> Result<()> {
    Ok(bodies::register(conn)?)
}

/// How a stored body keeps `json`: `Some(blob)` (the compressed form
/// `events.body` holds) when compression saves space, `None` to keep the
/// text. For tools that measure or write the format; the store calls it
/// itself.
pub fn encode_body(json: &str) -> Option<Vec<u8>> {
    bodies::encode(json)
}

/// The JSON of a compressed stored body (a blob [`encode_body`] wrote).
pub fn decode_body(blob: &[u8]) -> Result<String> {
    bodies::decode(blob).map_err(|e| StoreError::corrupt(e.to_string()))
}

/// Creates the parent directory and the database file, private to the owner
/// (the file holds destination secrets), before SQLite opens it.
fn prepare_file(path: &Path) -> Result<()> {
    let io = |what: &str, e: std::io::Error| {
        StoreError::caused(
            crate::error::ErrorKind::Unavailable,
            format!("{what} {}", path.display()),
            e,
        )
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| io("create directory for", e))?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        options.mode(0o600);
        options.open(path).map_err(|e| io("create", e))?;
        // Tighten a file created earlier with looser permissions.
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| io("set permissions on", e))?;
    }
    #[cfg(not(unix))]
    options.open(path).map_err(|e| io("create", e))?;
    Ok(())
}
