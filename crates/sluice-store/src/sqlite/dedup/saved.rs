//! The window saved beside the database at a clean stop, so that the next
//! start loads it instead of reading every event of the window again.
//!
//! Rebuilding from the events costs one step of SQLite per event: about 5 s
//! for 10 million ids on a 2-core machine (BENCHMARKS.md, "Deduplication"),
//! during which the server does not answer. The saved window is the table
//! itself, about 5 bytes an id, read back in well under a second.
//!
//! # Invariants
//! - **A saved window is the window at an event.** It is written after the
//!   writer has stopped, and names the newest stored event (its seq, and
//!   the key of its source and message id, `check`). Every ingested event
//!   up to that seq is in it; the events after it, if any, are read from
//!   the database at the next start.
//! - **It is used only against the database it was saved from.** At start
//!   the event at its seq must exist with the same key, else the window is
//!   rebuilt from the events. A database restored from a backup, or another
//!   database under the same name, fails the check. A purge that deleted
//!   that very event only costs the full rebuild.
//! - **It is used once.** The file is removed as it is read, and the next
//!   clean stop writes a new one. After a crash the window is rebuilt from
//!   the events. (An older saved window would be exact too, once the
//!   events after its seq were read: removing it only keeps that read
//!   short.)
//! - **A hit is confirmed against the events, as always.** The file holds
//!   keyed 27-bit fingerprints of message ids, no ids and nothing of a
//!   person; a stale entry (an event purged since) can only cost a read.
//!
//! # Layout
//! Little-endian: the magic, the SipHash keys, span and width, the seq and
//! `check`, the live tags, the newest table's start, the generations, the
//! tables (bucket count, then every slot), and a SipHash of everything
//! before it. Written to a temporary file, synced, and renamed into place.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use siphasher::sip::SipHasher13;
use std::hash::Hasher;

use super::table::{Bucket, SLOTS, TAGS, Table};
use super::window::{Generation, Window};

const MAGIC: &[u8; 8] = b"SLDEDUP1";

/// More tables than this is not a window this code wrote.
const MAX_TABLES: u32 = 64;

/// Buckets read or written at a time.
const CHUNK: usize = 1024;

/// The file of the window saved for the database at `db`.
pub(crate) fn path_for(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push("-dedup");
    PathBuf::from(name)
}

/// A window read back, with the event it was saved at.
pub(super) struct Saved {
    pub(super) window: Window,
    pub(super) seq: i64,
    pub(super) check: u64,
}

/// Writes `window`, saved at the event `seq` whose key is `check`.
pub(super) fn encode<W: Write>(out: W, window: &Window, seq: i64, check: u64) -> io::Result<()> {
    let mut out = Summed::new(out);
    out.put(MAGIC)?;
    out.put_u64(window.keys.0)?;
    out.put_u64(window.keys.1)?;
    out.put_i64(window.span)?;
    out.put_i64(window.width)?;
    out.put_i64(seq)?;
    out.put_u64(check)?;
    out.put_u32(window.live)?;
    out.put_i64(window.newest_since.unwrap_or(i64::MIN))?;
    out.put_u32(len_u32(window.generations.len()))?;
    for g in &window.generations {
        out.put_i64(g.start)?;
        out.put_i64(g.end)?;
        out.put(&[g.tag])?;
        out.put_u64(g.ids as u64)?;
        out.put_i64(g.lowest_seq)?;
        out.put_i64(g.highest_seq)?;
    }
    out.put_u32(len_u32(window.tables.len()))?;
    let mut buf = Vec::with_capacity(CHUNK * SLOTS * 4);
    for table in &window.tables {
        out.put_u64(table.buckets() as u64)?;
        for entry in table.entries() {
            buf.extend_from_slice(&entry.to_le_bytes());
            if buf.len() == buf.capacity() {
                out.put(&buf)?;
                buf.clear();
            }
        }
        out.put(&buf)?;
        buf.clear();
    }
    let sum = out.sum.finish();
    out.inner.write_all(&sum.to_le_bytes())?;
    out.inner.flush()
}

/// Reads a window written by [`encode`] for a window of `span`. `None` when
/// the bytes are not one (another format, another span, damaged).
pub(super) fn decode<R: Read>(input: R, span: Duration) -> io::Result<Option<Saved>> {
    let mut input = Summed::new(input);
    let mut magic = [0u8; 8];
    input.take(&mut magic)?;
    if &magic != MAGIC {
        return Ok(None);
    }
    let keys = (input.get_u64()?, input.get_u64()?);
    let mut window = Window::with_keys(span, keys);
    if input.get_i64()? != window.span || input.get_i64()? != window.width {
        return Ok(None);
    }
    let (seq, check) = (input.get_i64()?, input.get_u64()?);
    window.live = input.get_u32()?;
    window.newest_since = Some(input.get_i64()?).filter(|&s| s != i64::MIN);
    let generations = input.get_u32()?;
    if generations >= TAGS as u32 {
        return Ok(None);
    }
    let mut live = 0u32;
    for _ in 0..generations {
        let (start, end) = (input.get_i64()?, input.get_i64()?);
        let mut tag = [0u8];
        input.take(&mut tag)?;
        let tag = tag[0];
        let ids = usize::try_from(input.get_u64()?).unwrap_or(usize::MAX);
        let (lowest_seq, highest_seq) = (input.get_i64()?, input.get_i64()?);
        if tag == 0 || usize::from(tag) >= TAGS || live & (1 << tag) != 0 {
            return Ok(None);
        }
        live |= 1 << tag;
        window.generations.push(Generation {
            start,
            end,
            tag,
            ids,
            lowest_seq,
            highest_seq,
        });
    }
    if live != window.live {
        return Ok(None);
    }
    let tables = input.get_u32()?;
    if tables > MAX_TABLES {
        return Ok(None);
    }
    let mut buf = vec![0u8; CHUNK * SLOTS * 4];
    for _ in 0..tables {
        let Ok(count) = usize::try_from(input.get_u64()?) else {
            return Ok(None);
        };
        let mut buckets = Vec::new();
        if buckets.try_reserve_exact(count).is_err() {
            return Ok(None);
        }
        while buckets.len() < count {
            let n = (count - buckets.len()).min(CHUNK);
            let bytes = &mut buf[..n * SLOTS * 4];
            input.take(bytes)?;
            buckets.extend(bytes.chunks_exact(SLOTS * 4).map(|b| {
                let mut bucket = Bucket::default();
                for (slot, word) in bucket.0.iter_mut().zip(b.chunks_exact(4)) {
                    *slot = u32::from_le_bytes([word[0], word[1], word[2], word[3]]);
                }
                bucket
            }));
        }
        match Table::from_buckets(buckets) {
            Some(table) => window.tables.push(table),
            None => return Ok(None),
        }
    }
    let sum = input.sum.finish();
    let mut stored = [0u8; 8];
    input.inner.read_exact(&mut stored)?;
    if u64::from_le_bytes(stored) != sum {
        return Ok(None);
    }
    // Entries of generations that expired before the save remain: sweep
    // them from the start, as `Window::expire` does.
    let dead = !window.live;
    if window.tables.iter().any(|t| t.entries_of(dead) > 0) {
        window.sweep = Some((0, 0));
    }
    Ok(Some(Saved { window, seq, check }))
}

/// Writes `window`, saved at the event `seq` with key `check`, to `path`:
/// a temporary file, synced, then renamed over it.
pub(super) fn write(path: &Path, window: &Window, seq: i64, check: u64) -> io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let file = File::create(&tmp)?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    encode(&mut out, window, seq, check)?;
    let file = out.into_inner().map_err(io::IntoInnerError::into_error)?;
    file.sync_all()?;
    std::fs::rename(&tmp, path)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// Reads and removes the window saved at `path`, if there is one. A file
/// that is not a window of `span`, or cannot be read, is removed too and
/// counts as none: the window is rebuilt from the events instead.
pub(super) fn take(path: &Path, span: Duration) -> Option<Saved> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "saved message-id window unreadable");
            return None;
        }
    };
    let read = decode(BufReader::with_capacity(1 << 20, file), span);
    if let Err(e) = std::fs::remove_file(path) {
        // Harmless: a window older than the events is still exact once
        // the events after its seq are read (see the invariants).
        tracing::warn!(path = %path.display(), error = %e, "saved message-id window not removed");
    }
    match read {
        Ok(Some(saved)) => Some(saved),
        Ok(None) => {
            tracing::info!(path = %path.display(), "saved message-id window is of another form; rebuilding");
            None
        }
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "saved message-id window unreadable");
            None
        }
    }
}

fn len_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// A reader or writer that hashes what passes through it.
struct Summed<T> {
    inner: T,
    sum: SipHasher13,
}

impl<T> Summed<T> {
    fn new(inner: T) -> Self {
        Summed {
            inner,
            sum: SipHasher13::new(),
        }
    }
}

impl<W: Write> Summed<W> {
    fn put(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.sum.write(bytes);
        self.inner.write_all(bytes)
    }
    fn put_u32(&mut self, v: u32) -> io::Result<()> {
        self.put(&v.to_le_bytes())
    }
    fn put_u64(&mut self, v: u64) -> io::Result<()> {
        self.put(&v.to_le_bytes())
    }
    fn put_i64(&mut self, v: i64) -> io::Result<()> {
        self.put(&v.to_le_bytes())
    }
}

impl<R: Read> Summed<R> {
    fn take(&mut self, bytes: &mut [u8]) -> io::Result<()> {
        self.inner.read_exact(bytes)?;
        self.sum.write(bytes);
        Ok(())
    }
    fn get_u32(&mut self) -> io::Result<u32> {
        let mut b = [0u8; 4];
        self.take(&mut b)?;
        Ok(u32::from_le_bytes(b))
    }
    fn get_u64(&mut self) -> io::Result<u64> {
        let mut b = [0u8; 8];
        self.take(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }
    fn get_i64(&mut self) -> io::Result<i64> {
        let mut b = [0u8; 8];
        self.take(&mut b)?;
        Ok(i64::from_le_bytes(b))
    }
}
