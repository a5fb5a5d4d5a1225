//! Deduplication of ingest by (source, messageId) over a window.
//!
//! A client that did not hear our `200` (a timeout, a proxy, a crash of the
//! server after the commit) sends the same batch again with the same
//! message ids; an import resumed from a checkpoint re-sends what it sent
//! after it. Segment drops a message whose id it has seen recently, and
//! receivers written for Segment expect that. So does `append`.
//!
//! # Invariants
//! - **Only committed ids count.** The window holds the ids of events the
//!   store committed (or that the current group wrote, which a later call
//!   in the same group must see). Every insert is journaled; the writer
//!   takes a rolled-back savepoint's or a failed group's inserts out again
//!   ([`Window::undo_to`]) and keeps them at `COMMIT` ([`Window::commit`]).
//! - **No non-duplicate is ever dropped.** The window holds 27-bit
//!   fingerprints of 64-bit hashes, so a hit may be another id with the
//!   same fingerprint in the same buckets (about 32 lookups in 2^27), a
//!   purged event (deleted, or emptied into a tombstone), or an event
//!   retention deleted: every hit is confirmed against the `events` table
//!   ([`super::message_ids::stored_between`]), within the seqs of the
//!   generations whose tag the matching entries carry. Only a stored event
//!   of the same source with the same message id makes a duplicate.
//! - **No duplicate within the window is stored.** The writer is the only
//!   one appending, one call at a time, and the window is checked and
//!   updated on its thread: two calls with one id in the same group, or one
//!   batch repeating an id, store the first and drop the others.
//! - **Only ingest is checked.** The profile engine's identify messages and
//!   the privacy source's delete notifications are written by their own
//!   jobs, with ids of their own, and never pass through here.
//!
//! # Layout
//! [`Window`]: 24 generations over the window (1 hour of the default 24),
//! each with a 5-bit tag and the lowest and highest seq it holds, and one
//! table of 32-bit entries (fingerprint and tag) in buckets of 16, a
//! cache line, shared by all generations (`table.rs`): a lookup reads two
//! cache lines however many generations there are. A generation expires
//! by its tag leaving the live set; its entries are free slots from then
//! on and a sweep of two buckets per insert empties them, so the tag can
//! be used again. A full table is never resized (the hashes are gone): a
//! table for twice the ids is started beside it, and the old one goes
//! when its last generation expires. Sized at open for the events found,
//! the table is 80 % full: 5 bytes per id (10 million ids: 50 MB;
//! BENCHMARKS.md, "Deduplication"). Nothing is written to disk: the
//! events themselves are the record.
//!
//! # Recovery
//! A clean stop saves the window beside the database ([`save`],
//! `saved.rs`), naming the newest event; the next open loads it and reads
//! only the events after that one ([`restore`]). Otherwise (after a
//! `kill -9`, or with no saved window that matches the database) the open
//! reads the `(seq, source_id, message_id, received_at)` of every event
//! inside the window (found by seq: events are stored in time order, see
//! `prune::prune_chunk`) into a new window. Either way the database holds
//! exactly the committed events, so the window is exactly what it was at
//! the last commit. The full read is one pass over the window's events at
//! start (see `BENCHMARKS.md`, "Deduplication").

mod saved;
mod table;
mod window;

use std::path::Path;

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use rusqlite::{Connection, OptionalExtension};

use crate::{Result, StoreError};
pub(crate) use saved::path_for as saved_path;
pub(crate) use window::{Keyer, Window};

/// The window, shared by the ingest jobs (on the writer thread) and the
/// writer itself (which commits or undoes the journal).
pub(crate) type Shared = Arc<Mutex<Window>>;

/// The window, even if a job panicked while holding it: its journal is
/// undone with the panicking job's savepoint.
pub(crate) fn lock(shared: &Shared) -> MutexGuard<'_, Window> {
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Version 17: usage counts the events dropped as duplicates, per source
/// and day, beside the events stored.
pub(super) const SCHEMA_DUPLICATES: &str = "
ALTER TABLE usage ADD COLUMN duplicates INTEGER NOT NULL DEFAULT 0;
";

/// Events received this long before the horizon are read too: events are
/// in time order only give or take the profile engine's messages prepared
/// ahead (60 s), so the search by seq starts this much earlier.
const SLACK_MS: i64 = 5 * 60 * 1000;

/// The window of `span` for the database at `db` (open on `conn`) at
/// `now`: the saved one and the events after it, or one rebuilt from the
/// events. Runs at open, before the writer takes calls.
pub(crate) fn restore(
    conn: &Connection,
    db: &Path,
    span: std::time::Duration,
    now: i64,
) -> Result<Window> {
    let started = Instant::now();
    let (mut window, after) = match saved::take(&saved::path_for(db), span) {
        Some(s) if saved_at(conn, &s.window, s.seq)? == Some(s.check) => (s.window, Some(s.seq)),
        Some(_) => {
            tracing::info!("saved message-id window is of another database; rebuilding");
            (Window::new(span), None)
        }
        None => (Window::new(span), None),
    };
    window.expire(now);
    rebuild(conn, &mut window, now, after)?;
    tracing::info!(
        ids = window.len(),
        bytes = window.bytes(),
        saved = after.is_some(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "message-id window ready"
    );
    Ok(window)
}

/// Saves `window` beside the database at `db`, at its newest event: the
/// writer has stopped, so the window holds every event up to it. Nothing is
/// saved for an empty database.
pub(crate) fn save(conn: &Connection, db: &Path, window: &Window) -> Result<()> {
    let started = Instant::now();
    let path = saved::path_for(db);
    let newest: Option<(i64, u64)> = conn
        .query_row(
            "SELECT seq, source_id, message_id FROM events ORDER BY seq DESC LIMIT 1",
            [],
            |r| {
                let source = r.get_ref(1)?.as_str()?;
                let message = r.get_ref(2)?.as_str()?;
                Ok((r.get(0)?, window.key(source, message)))
            },
        )
        .optional()?;
    let Some((seq, check)) = newest else {
        return Ok(());
    };
    saved::write(&path, window, seq, check)
        .map_err(|e| StoreError::internal(format!("saving the message-id window: {e}")))?;
    tracing::info!(
        ids = window.len(),
        elapsed_ms = started.elapsed().as_millis() as u64,
        "message-id window saved"
    );
    Ok(())
}

/// The key of the event stored as `seq`, by `window`'s hash.
fn saved_at(conn: &Connection, window: &Window, seq: i64) -> Result<Option<u64>> {
    Ok(conn
        .query_row(
            "SELECT source_id, message_id FROM events WHERE seq = ?1",
            [seq],
            |r| Ok(window.key(r.get_ref(0)?.as_str()?, r.get_ref(1)?.as_str()?)),
        )
        .optional()?)
}

/// Adds to `window` the events received since its horizon at `now`, only
/// those after seq `after` when given.
pub(crate) fn rebuild(
    conn: &Connection,
    window: &mut Window,
    now: i64,
    after: Option<i64>,
) -> Result<()> {
    let horizon = window.horizon(now);
    let (lowest, highest): (Option<i64>, Option<i64>) =
        conn.query_row("SELECT min(seq), max(seq) FROM events", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
    let (Some(lowest), Some(highest)) = (lowest, highest) else {
        return Ok(());
    };
    let mut first_from = conn.prepare_cached(
        "SELECT seq, received_at FROM events WHERE seq >= ?1 ORDER BY seq LIMIT 1",
    )?;
    let from = super::prune::time_boundary(
        lowest,
        highest.saturating_add(1),
        horizon.saturating_sub(SLACK_MS),
        |seq| {
            first_from
                .query_row([seq], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
        },
    )?;
    let from = after.map_or(from, |seq| from.max(seq.saturating_add(1)));
    // Seqs are handed out in order, so there are at most this many events.
    window.reserve(usize::try_from(highest.saturating_sub(from) + 1).unwrap_or(0));
    let mut rows =
        conn.prepare("SELECT seq, source_id, message_id, received_at FROM events WHERE seq >= ?1")?;
    let mut rows = rows.query([from])?;
    let mut read = 0u32;
    while let Some(row) = rows.next()? {
        read = read.wrapping_add(1);
        if read.is_multiple_of(65_536) {
            // Nothing to undo here: keeps the journal small.
            window.commit();
        }
        let at: i64 = row.get(3)?;
        if at < horizon {
            continue;
        }
        let source = row.get_ref(1)?.as_str().map_err(rusqlite::Error::from)?;
        let message = row.get_ref(2)?.as_str().map_err(rusqlite::Error::from)?;
        let key = window.key(source, message);
        window.insert(key, at, row.get(0)?);
    }
    window.commit();
    Ok(())
}

/// Whether `message_id` of `source_id` is a duplicate: its hash is in the
/// window and the event is stored. Runs on the writer thread.
pub(crate) fn is_duplicate(
    conn: &Connection,
    window: &Window,
    key: u64,
    source_id: &str,
    message_id: &str,
) -> Result<bool> {
    match window.seqs_of(key) {
        None => Ok(false),
        Some((lo, hi)) => super::message_ids::stored_between(conn, source_id, message_id, lo, hi),
    }
}

#[cfg(test)]
mod saved_tests;
#[cfg(test)]
mod tests;
