//! Finding events by message id without an index on `events.message_id`.
//!
//! Message ids are random, so an index on them costs each append an insert
//! at a random place in a B-tree that grows with the table: every group
//! commit dirtied leaf pages all over it, 5-10 % of batch ingest
//! (BENCHMARKS.md, "Measured choices"). Lookups by message id are rare: the
//! delivery log's filter and the admin API's `?message_id=`. So instead
//! each block of [`BLOCK`] consecutive seqs gets one bloom filter of its
//! message ids, written once, when the block is complete.
//!
//! # Invariants
//! - **A block's filter is final.** It is written only once an event with a
//!   higher seq exists. Seqs are rowids handed out as max + 1 and the newest
//!   event is never deleted, so no event can enter a block after its filter
//!   is written.
//! - **Filters are written in block order**, the first at the lowest stored
//!   event's block. Every block from the first filter to the last has a
//!   filter, or had one and no longer has events (retention removes a
//!   block's filter once every seq in it is below the lowest stored event).
//! - **A lookup never misses.** It scans, by seq range, each block whose
//!   filter may hold the id, and every event above the last filter. A
//!   filter that went stale (a purge rewrote an event's message id, events
//!   were deleted) can only cost a needless scan.
//!
//! # Layout
//! `event_blooms (block INTEGER PRIMARY KEY, bits BLOB NOT NULL)`, with
//! `block = seq >> SHIFT`; the bits and their hash are `bloom.rs`'s, about
//! 10 bits (1.25 bytes) per event against the index's 26.
//!
//! # Recovery
//! A filter is written in the transaction of the append that completes its
//! block, so a rollback takes both. Blocks completed by other writers (the
//! profile engine's and the privacy source's events, which do not check)
//! are picked up by the next append that completes a block, and all of them
//! at open ([`catch_up`]), which is also how a database migrated from the
//! index gets its filters.
//!
//! The same blocks also record which sources they hold (`source_blocks`),
//! written at the same moments.

mod bloom;

use rusqlite::{Connection, params};

use crate::Result;

/// log2 of the seqs per block.
pub(super) const SHIFT: u32 = 12;

/// Seqs per block: 4096 events, a 5 KiB filter.
pub(super) const BLOCK: i64 = 1 << SHIFT;

/// After an append stored seqs `first..=last`: when that completed a block,
/// writes the filters of every complete block that has none yet. Runs in
/// the append's transaction.
pub(super) fn after_append(conn: &Connection, first: i64, last: i64) -> Result<()> {
    // A block is complete once a seq past it exists: `first` starting a
    // block completes the one before, and so does crossing into the next.
    if first >> SHIFT == last >> SHIFT && first & (BLOCK - 1) != 0 {
        return Ok(());
    }
    let through = (last >> SHIFT) - 1;
    build_through(conn, through)?;
    super::source_blocks::build_through(conn, through).map(drop)
}

/// Writes the filters of every complete block that has none. Runs at open,
/// in one transaction: after the migration from the index, that reads every
/// stored event's message id once.
pub(super) fn catch_up(conn: &mut Connection) -> Result<()> {
    let started = std::time::Instant::now();
    let tx = conn.transaction()?;
    let highest: Option<i64> = tx.query_row("SELECT max(seq) FROM events", [], |r| r.get(0))?;
    let built = match highest {
        Some(highest) => {
            let through = (highest >> SHIFT) - 1;
            build_through(&tx, through)?.max(super::source_blocks::build_through(&tx, through)?)
        }
        None => 0,
    };
    tx.commit()?;
    if built > 1 {
        tracing::info!(
            blocks = built,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "built message-id filters and source lists"
        );
    }
    Ok(())
}

/// Writes the filters of the blocks after the last filtered one, up to and
/// including `through`; returns how many.
fn build_through(conn: &Connection, through: i64) -> Result<u64> {
    let Some(next) = first_unbuilt(conn, "SELECT max(block) FROM event_blooms")? else {
        return Ok(0);
    };
    let mut ids =
        conn.prepare_cached("SELECT message_id FROM events WHERE seq >= ?1 AND seq < ?2")?;
    let mut store =
        conn.prepare_cached("INSERT INTO event_blooms (block, bits) VALUES (?1, ?2)")?;
    for block in next..=through {
        let lo = block << SHIFT;
        // Hashed straight from SQLite's buffer: no string per id. A block
        // that lost all its events before its filter was written (retention
        // after a restart) gets an empty filter, which matches nothing.
        let mut bits = vec![0u8; bloom::size_for(BLOCK as usize)];
        let mut any = false;
        let mut rows = ids.query(params![lo, lo + BLOCK])?;
        while let Some(row) = rows.next()? {
            let id = row.get_ref(0)?.as_str().map_err(rusqlite::Error::from)?;
            bloom::insert(&mut bits, id);
            any = true;
        }
        if !any {
            bits.clear();
        }
        store.execute(params![block, bits])?;
    }
    Ok(u64::try_from(through + 1 - next).unwrap_or(0))
}

/// The first block a per-block table still lacks: the one after its last
/// (`last_sql` selects that), or, for an empty table, the lowest stored
/// event's. `None` when there are no events.
pub(super) fn first_unbuilt(conn: &Connection, last_sql: &str) -> Result<Option<i64>> {
    let last: Option<i64> = conn.prepare_cached(last_sql)?.query_row([], |r| r.get(0))?;
    Ok(match last {
        Some(block) => Some(block + 1),
        None => conn
            .prepare_cached("SELECT min(seq) FROM events")?
            .query_row([], |r| r.get::<_, Option<i64>>(0))?
            .map(|lowest| lowest >> SHIFT),
    })
}

/// The seqs of the stored events whose message id is `message_id`, in
/// ascending order.
pub(super) fn seqs(conn: &Connection, message_id: &str) -> Result<Vec<i64>> {
    let mut covered_to = 0;
    let mut candidates = Vec::new();
    {
        let mut filters =
            conn.prepare_cached("SELECT block, bits FROM event_blooms ORDER BY block")?;
        let mut rows = filters.query([])?;
        while let Some(row) = rows.next()? {
            let block: i64 = row.get(0)?;
            let bits = row.get_ref(1)?.as_blob().map_err(rusqlite::Error::from)?;
            if bloom::may_contain(bits, message_id) {
                candidates.push(block << SHIFT);
            }
            covered_to = (block + 1) << SHIFT;
        }
    }
    let mut scan = conn.prepare_cached(
        "SELECT seq FROM events WHERE seq >= ?1 AND seq < ?2 AND message_id = ?3 ORDER BY seq",
    )?;
    let mut found = Vec::new();
    let ranges = candidates
        .into_iter()
        .map(|lo| (lo, lo + BLOCK))
        .chain([(covered_to, i64::MAX)]);
    for (lo, hi) in ranges {
        let rows = scan.query_map(params![lo, hi, message_id], |r| r.get::<_, i64>(0))?;
        for seq in rows {
            found.push(seq?);
        }
    }
    Ok(found)
}

/// Whether an event of `source_id` with `message_id` is stored with a seq
/// in `lo..=hi`: the exact check behind deduplication (`dedup`). Reads the
/// filters of that range's blocks only, then scans the blocks they point
/// at and the events above the last filter (the current block, the
/// current group's events included).
pub(super) fn stored_between(
    conn: &Connection,
    source_id: &str,
    message_id: &str,
    lo: i64,
    hi: i64,
) -> Result<bool> {
    let mut ranges = Vec::new();
    let mut covered_to = lo;
    {
        let mut filters = conn.prepare_cached(
            "SELECT block, bits FROM event_blooms WHERE block >= ?1 AND block <= ?2 ORDER BY block",
        )?;
        let mut rows = filters.query(params![lo >> SHIFT, hi >> SHIFT])?;
        while let Some(row) = rows.next()? {
            let block: i64 = row.get(0)?;
            let bits = row.get_ref(1)?.as_blob().map_err(rusqlite::Error::from)?;
            if bloom::may_contain(bits, message_id) {
                ranges.push(((block << SHIFT).max(lo), ((block + 1) << SHIFT) - 1));
            }
            covered_to = covered_to.max((block + 1) << SHIFT);
        }
    }
    ranges.push((covered_to, hi));
    let mut scan = conn.prepare_cached(
        "SELECT 1 FROM events WHERE seq >= ?1 AND seq <= ?2 AND message_id = ?3
           AND source_id = ?4 LIMIT 1",
    )?;
    for (from, to) in ranges {
        if from <= to.min(hi) && scan.exists(params![from, to.min(hi), message_id, source_id])? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Drops the filters of blocks whose every seq is below the lowest stored
/// event (retention removed them all). Runs after retention deletes.
pub(super) fn forget_pruned(conn: &Connection) -> Result<()> {
    let lowest: Option<i64> = conn
        .prepare_cached("SELECT min(seq) FROM events")?
        .query_row([], |r| r.get(0))?;
    if let Some(lowest) = lowest {
        conn.prepare_cached("DELETE FROM event_blooms WHERE block < ?1")?
            .execute([lowest >> SHIFT])?;
        super::source_blocks::forget_below(conn, lowest)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
