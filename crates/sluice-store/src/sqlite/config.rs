//! How to open a [`super::SqliteStore`].

use std::path::PathBuf;
use std::time::Duration;

/// Durability of each commit (SQLite `PRAGMA synchronous`, in WAL mode).
///
/// Both settings keep every acknowledged event across a process crash or
/// `kill -9`: `append` answers only after `COMMIT`, and a committed WAL frame
/// is in the OS page cache before the call returns. They differ on power loss
/// or a kernel crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Synchronous {
    /// Sync the WAL on every commit: acknowledged events survive power loss.
    /// One sync per group commit, so the cost is shared by all grouped calls.
    /// The sync is `fdatasync(2)`, as in SQLite's own Linux builds: the
    /// bundled library is compiled with `HAVE_FDATASYNC` (the workspace's
    /// `.cargo/config.toml`), which a test below checks.
    #[default]
    Full,
    /// fsync only at checkpoints: survives process crashes, but the last
    /// commits before a power loss may be rolled back.
    Normal,
}

impl Synchronous {
    pub(super) fn pragma_value(self) -> &'static str {
        match self {
            Synchronous::Full => "FULL",
            Synchronous::Normal => "NORMAL",
        }
    }
}

/// Settings of the embedded SQLite backend.
#[derive(Debug, Clone)]
pub struct SqliteConfig {
    /// The database file; its directory is created when missing. The WAL
    /// (`<path>-wal`) and shared-memory index (`<path>-shm`) live beside it.
    pub path: PathBuf,
    pub synchronous: Synchronous,
    /// How long a statement waits for a lock held by another process (for
    /// example a backup tool) before failing.
    pub busy_timeout: Duration,
    /// How long opening waits for another process to release the database
    /// (`<path>.lock`) before failing: a restart that does not wait for the
    /// old process to finish stopping. 60 s.
    pub lock_wait: Duration,
    /// Read-only connections kept for concurrent reads (at least 1).
    pub read_connections: usize,
    /// Upper bound on the events written by one group commit. Bounds the
    /// latency a single group adds to everyone queued behind it.
    pub max_group_events: usize,
    /// Upper bound on the jobs (calls) folded into one group commit.
    pub max_group_jobs: usize,
    /// How long a source's committed message ids are remembered to drop
    /// resent events (24 h); `None` stores every call. Costs about 5 bytes
    /// of memory per id in the window and a pass over its events at open.
    pub dedup_window: Option<Duration>,
    /// `PRAGMA secure_delete` on the writer, and the zeroing of free space
    /// at the end of each purge (`scrub`): no byte of a purged user is left
    /// in the files. On by default; off, a purge is faster but the deleted
    /// bytes stay in free space until SQLite reuses it.
    pub secure_delete: bool,
}

impl SqliteConfig {
    /// Defaults for a database at `path`: `synchronous = FULL`, 5 s busy
    /// timeout, 4 readers, groups of up to 8192 events or 1024 calls, a
    /// 24-hour deduplication window.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        SqliteConfig {
            path: path.into(),
            synchronous: Synchronous::Full,
            busy_timeout: Duration::from_secs(5),
            lock_wait: Duration::from_secs(60),
            read_connections: 4,
            max_group_events: 8192,
            max_group_jobs: 1024,
            dedup_window: Some(Duration::from_secs(24 * 3600)),
            secure_delete: true,
        }
    }
}

#[cfg(test)]
mod tests {
    /// The variable reaches every build script of the same cargo run, the
    /// bundled SQLite's among them, and libsqlite3-sys rebuilds when it
    /// changes.
    #[test]
    fn the_bundled_sqlite_is_built_to_sync_with_fdatasync() {
        let flags = option_env!("LIBSQLITE3_FLAGS").unwrap_or_default();
        assert!(
            flags.split_whitespace().any(|f| f == "-DHAVE_FDATASYNC=1"),
            "LIBSQLITE3_FLAGS = {flags:?}"
        );
    }
}
