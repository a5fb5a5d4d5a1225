//! A source's recent events without an index on `events (source_id, seq)`.
//!
//! That index cost every stored event a second B-tree insert and 38 bytes
//! (a 20-character source id and the seq, per event; BENCHMARKS.md,
//! "Measured choices"), for one reader: the debugger's and the admin API's page of a
//! source's newest calls. Instead each block of `message_ids::BLOCK`
//! consecutive seqs records which sources it holds, once the block is
//! complete, beside its message-id filter. A page walks the blocks newest
//! first and scans, by seq range, only those that hold the source.
//!
//! # Invariants
//! - **A block's list is final and complete**, for the same reasons as its
//!   message-id filter (see `message_ids`): it is written only once a higher
//!   seq exists, from the rows themselves, so every writer's events are in
//!   it (ingest's, the profile engine's, the privacy job's).
//! - **Lists are written in block order**, from the lowest stored event's
//!   block, so every block from the first list to the last has one.
//!   Retention drops the lists of blocks below the lowest stored event.
//! - **A page never misses an event.** Everything above the last listed
//!   block is scanned; a listed block is skipped only when its list lacks the
//!   source. A list that went stale (a purge deleted the source's events)
//!   only costs a needless scan.
//!
//! # Cost
//! A source with more than [`SPARSE`] calls in a block is found by scanning
//! the block (4,096 rowids, about a millisecond), and a page of 50 needs at
//! most three such blocks. A source with fewer has their seqs in the list,
//! read by rowid: a quiet source beside a busy one costs a lookup per call,
//! not a scan per block (`sluice-bench --only dashboard`, "quiet source").
//!
//! # Layout
//! `event_block_sources (block INTEGER PRIMARY KEY, sources TEXT NOT NULL)`:
//! one line per source in the block, sorted by id: the id alone when it has
//! more than [`SPARSE`] calls there, else the id, a tab and its seqs in
//! ascending order, comma-separated.
//!
//! # Recovery
//! Written in the transaction of the append that completes the block (see
//! `message_ids::after_append`); blocks completed by other writers, and a
//! database migrated from the index, get their lists from the next such
//! append or at open ([`build_through`] from `message_ids::catch_up`).

use std::collections::BTreeMap;

use rusqlite::{Connection, params};

use super::message_ids::{self, BLOCK, SHIFT};
use super::rows::{EVENT_COLUMNS, sql_limit, stored_event};
use crate::{Result, StoredEvent};

/// Up to this many calls of a source in a block are listed by seq.
const SPARSE: usize = 16;

/// Writes the lists of the blocks after the last listed one, up to and
/// including `through`; returns how many.
pub(super) fn build_through(conn: &Connection, through: i64) -> Result<u64> {
    let last = "SELECT max(block) FROM event_block_sources";
    let Some(next) = message_ids::first_unbuilt(conn, last)? else {
        return Ok(0);
    };
    let mut sources =
        conn.prepare_cached("SELECT seq, source_id FROM events WHERE seq >= ?1 AND seq < ?2")?;
    let mut store =
        conn.prepare_cached("INSERT INTO event_block_sources (block, sources) VALUES (?1, ?2)")?;
    for block in next..=through {
        let lo = block << SHIFT;
        // Per source, its first seqs (ascending) and whether there were more.
        let mut seen: BTreeMap<String, (Vec<i64>, bool)> = BTreeMap::new();
        let mut rows = sources.query(params![lo, lo + BLOCK])?;
        while let Some(row) = rows.next()? {
            let seq: i64 = row.get(0)?;
            let id = row.get_ref(1)?.as_str().map_err(rusqlite::Error::from)?;
            let entry = match seen.get_mut(id) {
                Some(entry) => entry,
                None => seen.entry(id.to_owned()).or_default(),
            };
            if entry.0.len() < SPARSE {
                entry.0.push(seq);
            } else {
                entry.1 = true;
            }
        }
        store.execute(params![block, list_text(&seen)])?;
    }
    Ok(u64::try_from(through + 1 - next).unwrap_or(0))
}

/// The newest `limit` events of `source_id` below `before_seq`, newest
/// first.
pub(super) fn recent_events(
    conn: &Connection,
    source_id: &str,
    before_seq: Option<i64>,
    limit: u32,
) -> Result<Vec<StoredEvent>> {
    let before = before_seq.unwrap_or(i64::MAX);
    let covered_to: i64 = conn
        .prepare_cached("SELECT max(block) FROM event_block_sources")?
        .query_row([], |r| r.get::<_, Option<i64>>(0))?
        .map_or(0, |block| (block + 1) << SHIFT);
    let mut out = Vec::new();
    let want = usize::try_from(limit).unwrap_or(usize::MAX);
    if before > covered_to {
        scan(conn, source_id, covered_to, before, want, &mut out)?;
    }
    let mut blocks = conn.prepare_cached(
        "SELECT block, sources FROM event_block_sources WHERE block <= ?1 ORDER BY block DESC",
    )?;
    let mut rows = blocks.query([(before.min(covered_to) - 1) >> SHIFT])?;
    while out.len() < want {
        let Some(row) = rows.next()? else { break };
        let block: i64 = row.get(0)?;
        let list = row.get_ref(1)?.as_str().map_err(rusqlite::Error::from)?;
        let lo = block << SHIFT;
        match find(list, source_id) {
            None => {}
            Some(None) => scan(conn, source_id, lo, before.min(lo + BLOCK), want, &mut out)?,
            Some(Some(seqs)) => {
                let mut listed: Vec<i64> = seqs
                    .split(',')
                    .filter_map(|s| s.parse().ok())
                    .filter(|&s| s < before)
                    .collect();
                listed.reverse();
                for seq in listed {
                    if out.len() >= want {
                        break;
                    }
                    scan(conn, source_id, seq, seq + 1, want, &mut out)?;
                }
            }
        }
    }
    Ok(out)
}

/// A block list's text (see the module's layout).
fn list_text(seen: &BTreeMap<String, (Vec<i64>, bool)>) -> String {
    let lines: Vec<String> = seen
        .iter()
        .map(|(id, (seqs, more))| {
            if *more {
                id.clone()
            } else {
                let seqs: Vec<String> = seqs.iter().map(i64::to_string).collect();
                format!("{id}\t{}", seqs.join(","))
            }
        })
        .collect();
    lines.join("\n")
}

/// `source_id`'s entry in a block list: `None` when absent, `Some(None)`
/// when the block must be scanned, `Some(Some(seqs))` when its seqs are
/// listed.
fn find<'a>(list: &'a str, source_id: &str) -> Option<Option<&'a str>> {
    list.split('\n')
        .find_map(|line| match line.split_once('\t') {
            Some((id, seqs)) => (id == source_id).then_some(Some(seqs)),
            None => (line == source_id).then_some(None),
        })
}

/// Appends the events of `source_id` with `lo <= seq < hi`, newest first,
/// until `out` holds `want`.
fn scan(
    conn: &Connection,
    source_id: &str,
    lo: i64,
    hi: i64,
    want: usize,
    out: &mut Vec<StoredEvent>,
) -> Result<()> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {EVENT_COLUMNS} FROM events
         WHERE seq >= ?2 AND seq < ?3 AND source_id = ?1 ORDER BY seq DESC LIMIT ?4"
    ))?;
    let left = u32::try_from(want.saturating_sub(out.len())).unwrap_or(u32::MAX);
    let rows = stmt.query_map(params![source_id, lo, hi, sql_limit(left)], stored_event)?;
    for event in rows {
        out.push(event?);
    }
    Ok(())
}

/// Drops the lists of blocks whose every seq is below `lowest`, the lowest
/// stored event. Runs after retention deletes.
pub(super) fn forget_below(conn: &Connection, lowest: i64) -> Result<()> {
    conn.prepare_cached("DELETE FROM event_block_sources WHERE block < ?1")?
        .execute([lowest >> SHIFT])?;
    Ok(())
}

#[cfg(test)]
#[path = "source_blocks_tests.rs"]
mod tests;
