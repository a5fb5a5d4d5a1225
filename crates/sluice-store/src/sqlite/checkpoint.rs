//! Background WAL checkpoints.
//!
//! A checkpoint copies committed WAL frames into the database file and
//! fsyncs it, so the WAL can restart from its beginning. Left to SQLite's
//! auto-checkpoint, that work (and its fsync) would run on the writer thread
//! after a commit, stalling every caller queued behind it. Instead the
//! writer nudges this thread after each commit and it runs a PASSIVE
//! checkpoint on its own connection, beside the writer (WAL allows it).
//! Nudges coalesce, and under load checkpoints start at most every
//! [`MIN_INTERVAL`]: run back to back, each one copied the pages of only a
//! commit or two, so a page rewritten by every commit (the tail of the
//! events table and of its indexes) was copied and fsynced again and again.
//! Spaced out, one copy serves all the commits in between. At full batch
//! ingest (an estimate: 200,000 events a second at about 870 bytes stored
//! each, some 170 MB of WAL a second) the interval leaves under 20 MB of
//! WAL between checkpoints. The writer keeps a large auto-checkpoint
//! threshold (64 MiB) as a safety net in case this thread falls behind.

use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::Connection;

use crate::{Result, StoreError};

/// Shortest time from one checkpoint's start to the next one's.
const MIN_INTERVAL: Duration = Duration::from_millis(100);

/// The writer's side: nudge after commits; dropping it stops the thread.
pub(super) struct Checkpointer {
    nudge: SyncSender<()>,
    thread: JoinHandle<()>,
}

impl Checkpointer {
    /// Starts the thread with `conn`, a read-write connection to the database.
    pub(super) fn spawn(conn: Connection) -> Result<Checkpointer> {
        let (nudge, nudges) = sync_channel(1);
        let thread = std::thread::Builder::new()
            .name("sluice-sqlite-checkpoint".into())
            .spawn(move || checkpoint_loop(&conn, &nudges))
            .map_err(|e| StoreError::Backend(format!("spawn checkpoint thread: {e}")))?;
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

fn checkpoint_loop(conn: &Connection, nudges: &Receiver<()>) {
    while nudges.recv().is_ok() {
        let started = Instant::now();
        let result = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
            Ok((row.get::<_, i64>(1)?, row.get::<_, i64>(2)?))
        });
        match result {
            Ok((wal_frames, copied)) => {
                tracing::trace!(wal_frames, copied, "sqlite checkpoint");
            }
            Err(e) => tracing::warn!(error = %e, "sqlite checkpoint failed"),
        }
        // Commits made meanwhile leave one nudge waiting, taken after this.
        if let Some(rest) = MIN_INTERVAL.checked_sub(started.elapsed()) {
            std::thread::sleep(rest);
        }
    }
}
