//! Zeroing the unallocated space of the database's pages, so a purged
//! user leaves no bytes in `sluice.db`.
//!
//! `secure_delete = ON` zeroes the space a deleted or updated row frees,
//! and every page put on the freelist. It does not cover one case: when
//! SQLite rebuilds a B-tree page (cells redistributed among siblings as
//! pages fill and empty; `rebuildPage` in its `btree.c`), it rewrites the
//! cells from the end of the page and leaves the bytes between the cell
//! pointers and the new start of the cells as they were. Those bytes are
//! copies of cells that moved elsewhere: when such a row is deleted later,
//! its live copy is zeroed and the stale one survives. Random inserts,
//! updates and deletes of rows of varied sizes produce them (the profile
//! engine's tables, deliveries changing state); a purge of 100 users among
//! such rows found a third of their ids still in the file.
//!
//! [`page`] zeroes that gap and the bodies of the page's free blocks, the
//! only bytes of a B-tree page that no cell owns. The page means the same
//! to SQLite before and after.
//!
//! # How a purge runs it
//! [`SqliteStore::scrub_free_space`], at the end of a regulation (before
//! it is marked `FINISHED`): a read connection reads every page (through
//! the `sqlite_dbpage` table, in its own snapshot, holding up no one) and
//! lists those with non-zero unallocated bytes; then the writer rewrites
//! them, [`CHUNK`] pages per job, each page read again inside the job, so
//! ingest runs between the jobs; then a `TRUNCATE` checkpoint moves the
//! zeroed pages from the WAL into the file. A purged row cannot be copied
//! into a gap after its purge committed, so pages clean at the read stay
//! clean of it.
//!
//! # Which pages are B-tree pages
//! A page is taken as a B-tree page by its first header byte (2, 5, 10 or
//! 13). An overflow or freelist trunk page starts with a page number, whose
//! first byte is 0 in a file of fewer than 2^24 pages (64 GiB at 4 KiB
//! pages), so it can never be taken for one; a larger file is not scrubbed
//! (logged). A free page that still holds a B-tree header (freed before
//! `secure_delete`) may be scrubbed like one: its bytes are unused anyway.
//! The header is checked for consistency before anything is zeroed.

mod page;

use std::time::Instant;

use rusqlite::Connection;

use super::SqliteStore;
use crate::Result;
pub(super) use page::page;

/// Pages rewritten per writer job: about 2 MiB, a few milliseconds.
const CHUNK: usize = 512;

/// Files of this many pages or more are not scrubbed (see the notes).
const MAX_PAGES: i64 = 1 << 24;

/// What a scrub did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Scrubbed {
    /// Pages read.
    pub pages: usize,
    /// Pages whose unallocated bytes were zeroed.
    pub rewritten: usize,
}

impl SqliteStore {
    /// Zeroes the unallocated space of every page of the database and
    /// empties the WAL into the file (see the module notes). A no-op with
    /// `secure_delete` off.
    pub async fn scrub_free_space(&self) -> Result<Scrubbed> {
        if !self.secure_delete {
            return Ok(Scrubbed::default());
        }
        let started = Instant::now();
        let (pages, dirty) = self.readers.run(dirty_pages).await?;
        let mut rewritten = 0;
        for chunk in dirty.chunks(CHUNK) {
            let chunk = chunk.to_vec();
            rewritten += self
                .writer
                .run(chunk.len(), move |c| rewrite(c, &chunk))
                .await?;
        }
        let path = self.path.clone();
        tokio::task::spawn_blocking(move || super::regulations::truncate_wal(&path))
            .await
            .map_err(|e| crate::StoreError::internal(format!("checkpoint task: {e}")))??;
        tracing::info!(
            pages,
            rewritten,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "free space of the database zeroed"
        );
        Ok(Scrubbed { pages, rewritten })
    }
}

/// The number of pages, and those with unallocated bytes to zero.
fn dirty_pages(c: &Connection) -> Result<(usize, Vec<i64>)> {
    let count: i64 = c.query_row("PRAGMA page_count", [], |r| r.get(0))?;
    if count >= MAX_PAGES {
        tracing::warn!(
            pages = count,
            "database too large to tell B-tree pages by their header: free space not zeroed"
        );
        return Ok((0, Vec::new()));
    }
    let usable = usable_size(c)?;
    let mut stmt = c.prepare("SELECT pgno, data FROM sqlite_dbpage")?;
    let mut rows = stmt.query([])?;
    let mut dirty = Vec::new();
    let mut pages = 0;
    let mut copy = Vec::new();
    while let Some(row) = rows.next()? {
        pages += 1;
        let pgno: i64 = row.get(0)?;
        let data = row.get_ref(1)?.as_blob().map_err(rusqlite::Error::from)?;
        copy.clear();
        copy.extend_from_slice(data);
        if page(&mut copy, pgno == 1, usable) {
            dirty.push(pgno);
        }
    }
    Ok((pages, dirty))
}

/// Zeroes the unallocated bytes of `pgnos` as they are now; returns how
/// many pages changed. Runs on the writer, inside its transaction.
fn rewrite(c: &Connection, pgnos: &[i64]) -> Result<usize> {
    let usable = usable_size(c)?;
    let mut read = c.prepare_cached("SELECT data FROM sqlite_dbpage WHERE pgno = ?1")?;
    let mut write = c.prepare_cached("UPDATE sqlite_dbpage SET data = ?2 WHERE pgno = ?1")?;
    let mut changed = 0;
    for &pgno in pgnos {
        let mut data: Vec<u8> = read.query_row([pgno], |r| r.get(0))?;
        if page(&mut data, pgno == 1, usable) {
            write.execute(rusqlite::params![pgno, data])?;
            changed += 1;
        }
    }
    Ok(changed)
}

/// The bytes of a page SQLite uses: the page size less the reserved bytes
/// at the end of each page (byte 20 of the file header).
fn usable_size(c: &Connection) -> Result<usize> {
    let size: i64 = c.query_row("PRAGMA page_size", [], |r| r.get(0))?;
    let first: Vec<u8> = c.query_row("SELECT data FROM sqlite_dbpage WHERE pgno = 1", [], |r| {
        r.get(0)
    })?;
    let reserved = first.get(20).copied().map_or(0, usize::from);
    Ok(usize::try_from(size).unwrap_or(0).saturating_sub(reserved))
}

#[cfg(test)]
mod tests;
