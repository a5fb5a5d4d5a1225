//! Background WAL checkpoints, and shrinking the WAL when the store is idle.
//!
//! A checkpoint copies committed WAL frames into the database file and
//! fsyncs it, so the WAL can restart from its beginning. Left to SQLite's
//! auto-checkpoint, that work (and its fsync) would run on the writer thread
//! after a commit, stalling every caller queued behind it. Instead the
//! writer nudges this thread after each commit and it runs a PASSIVE
//! checkpoint on its own connection, beside the writer (WAL allows it).
//! Nudges coalesce, and under load checkpoints start at most every
//! [`Timing::min_interval`]: run back to back, each one copied the pages of
//! only a commit or two, so a page rewritten by every commit (the tail of
//! the events table and of its indexes) was copied and fsynced again and
//! again. Spaced out, one copy serves all the commits in between. At full
//! batch ingest (an estimate: 200,000 events a second at about 870 bytes
//! stored each, some 170 MB of WAL a second) the interval leaves under
//! 20 MB of WAL between checkpoints. The writer keeps a large
//! auto-checkpoint threshold (64 MiB) as a safety net in case this thread
//! falls behind.
//!
//! **The WAL file's size.** SQLite reuses the WAL file from its start after
//! a checkpoint instead of shrinking it, and the writer caps what it keeps
//! at 64 MiB (`journal_size_limit`). Under load that is what we want:
//! overwriting frames of a file that already has its size needs no file
//! metadata in each commit's fsync, where appending to a shrunk file would.
//! Idle, those megabytes only take disk (a third of the data directory of a
//! store holding 200,000 events). So when no commit has come for
//! [`Timing::idle`] and the WAL file is larger than [`Timing::shrink_above`],
//! this thread runs a TRUNCATE checkpoint with no busy wait: it takes the
//! write lock only if it is free, and if a reader still uses the WAL it
//! gives up at once (it never holds the write lock while waiting for
//! readers) and tries again after the next idle period.

use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError, sync_channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::config::SqliteConfig;
use crate::{Result, StoreError};

/// When checkpoints run.
#[derive(Debug, Clone, Copy)]
pub(super) struct Timing {
    /// Shortest time from one checkpoint's start to the next one's.
    pub min_interval: Duration,
    /// How long without a commit before the WAL file may be shrunk.
    pub idle: Duration,
    /// WAL files up to this size are left as they are when idle.
    pub shrink_above: u64,
    /// The connection's busy timeout for PASSIVE checkpoints (the store's).
    pub busy_timeout: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            min_interval: Duration::from_millis(100),
            idle: Duration::from_millis(500),
            shrink_above: 4 << 20,
            busy_timeout: Duration::from_secs(5),
        }
    }
}

/// The writer's side: nudge after commits; dropping it stops the thread.
pub(super) struct Checkpointer {
    nudge: SyncSender<()>,
    thread: JoinHandle<()>,
}

impl Checkpointer {
    /// Starts the thread with `conn`, a read-write connection to the
    /// database of `config`.
    pub(super) fn spawn(conn: Connection, config: &SqliteConfig) -> Result<Checkpointer> {
        let timing = Timing {
            busy_timeout: config.busy_timeout,
            ..Timing::default()
        };
        Self::spawn_with(conn, wal_path(&config.path), timing)
    }

    fn spawn_with(conn: Connection, wal: PathBuf, timing: Timing) -> Result<Checkpointer> {
        let (nudge, nudges) = sync_channel(1);
        let thread = std::thread::Builder::new()
            .name("sluice-sqlite-checkpoint".into())
            .spawn(move || checkpoint_loop(&conn, &nudges, &wal, timing))
            .map_err(|e| StoreError::internal(format!("spawn checkpoint thread: {e}")))?;
        Ok(Checkpointer { nudge, thread })
    }

    /// Asks for a checkpoint soon; never blocks.
    pub(super) fn nudge(&self) {
        match self.nudge.try_send(()) {
            // Full: a checkpoint is already requested, which covers this commit.
            Ok(()) | Err(TrySendError::Full(())) => {}
            Err(TrySendError::Disconnected(())) => {
                tracing::warn!("sqlite checkpoint thread has stopped");
            }
        }
    }

    /// Stops the thread after its current checkpoint and waits for it.
    pub(super) fn stop(self) {
        drop(self.nudge);
        if self.thread.join().is_err() {
            tracing::error!("sqlite checkpoint thread panicked");
        }
    }
}

/// SQLite's name for the WAL of the database at `db`.
fn wal_path(db: &std::path::Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push("-wal");
    PathBuf::from(name)
}

fn checkpoint_loop(conn: &Connection, nudges: &Receiver<()>, wal: &std::path::Path, t: Timing) {
    // Whether a commit came since the WAL was last found small or shrunk.
    let mut may_shrink = false;
    loop {
        let nudged = if may_shrink {
            nudges.recv_timeout(t.idle)
        } else {
            nudges.recv().map_err(|_| RecvTimeoutError::Disconnected)
        };
        match nudged {
            Ok(()) => {
                let started = Instant::now();
                checkpoint(conn, "PASSIVE");
                may_shrink = true;
                // Commits made meanwhile leave one nudge waiting, taken after this.
                if let Some(rest) = t.min_interval.checked_sub(started.elapsed()) {
                    std::thread::sleep(rest);
                }
            }
            Err(RecvTimeoutError::Timeout) => {
                let size = std::fs::metadata(wal).map_or(0, |m| m.len());
                may_shrink = size > t.shrink_above && !shrink(conn, t.busy_timeout);
            }
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// Runs one checkpoint in `mode`; returns whether it was held off by a lock
/// (SQLite's "busy" column).
fn checkpoint(conn: &Connection, mode: &str) -> bool {
    let result = conn.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |row| {
        Ok((
            row.get::<_, i64>(0)?,
            row.get::<_, i64>(1)?,
            row.get::<_, i64>(2)?,
        ))
    });
    match result {
        Ok((busy, wal_frames, copied)) => {
            tracing::trace!(mode, busy, wal_frames, copied, "sqlite checkpoint");
            busy != 0
        }
        Err(e) => {
            tracing::warn!(mode, error = %e, "sqlite checkpoint failed");
            true
        }
    }
}

/// Truncates the WAL to zero bytes if nobody needs it; never waits for a
/// lock. Returns whether it did.
fn shrink(conn: &Connection, busy_timeout: Duration) -> bool {
    let Ok(()) = conn.busy_timeout(Duration::ZERO) else {
        return false;
    };
    let busy = checkpoint(conn, "TRUNCATE");
    // Back to the connection's usual patience for the PASSIVE checkpoints.
    if let Err(e) = conn.busy_timeout(busy_timeout) {
        tracing::warn!(error = %e, "sqlite checkpoint busy timeout");
    }
    !busy
}

#[cfg(test)]
mod tests;
