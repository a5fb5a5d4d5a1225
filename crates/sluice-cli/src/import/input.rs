//! Reading the inputs on a thread of their own: files or stdin, plain or
//! gzip (recognised by its magic bytes, so `.gz` and piped gzip both work),
//! split into lines, checked, packed into batches, and handed to the sender
//! through a bounded channel (which is the read-ahead limit).

use std::cell::Cell;
use std::io::{BufRead, BufReader, Read};
use std::rc::Rc;

use flate2::read::MultiGzDecoder;
use tokio::sync::mpsc;

use super::batch::{Limits, LineRef, Packer, prepare};
use super::checkpoint::Ranges;
use super::{Batch, Rejected};

/// One input as the reader needs it.
pub struct Source {
    pub display: String,
    /// `None` for stdin.
    pub path: Option<std::path::PathBuf>,
    /// Lines already finished in an earlier run.
    pub done: Ranges,
}

/// Counts the bytes read from the underlying file, for progress.
struct Counting<R> {
    inner: R,
    count: Rc<Cell<u64>>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.set(self.count.get() + n as u64);
        Ok(n)
    }
}

/// What the reader sends: batches, then how reading ended.
pub enum FromReader {
    Batch(Batch),
    Failed(String),
}

/// Reads every source in order and sends batches until done or until the
/// receiver is dropped (the sender stopped).
pub fn read_all(sources: Vec<Source>, limits: Limits, tx: mpsc::Sender<FromReader>) {
    let mut base = 0u64;
    for (input, source) in sources.into_iter().enumerate() {
        let count = Rc::new(Cell::new(0u64));
        let opened: std::io::Result<Box<dyn Read>> = match &source.path {
            Some(p) => std::fs::File::open(p).map(|f| Box::new(f) as Box<dyn Read>),
            None => Ok(Box::new(std::io::stdin())),
        };
        let raw = match opened {
            Ok(r) => Counting {
                inner: r,
                count: count.clone(),
            },
            Err(e) => {
                let _ = tx.blocking_send(FromReader::Failed(format!("{}: {e}", source.display)));
                return;
            }
        };
        let mut buffered = BufReader::with_capacity(256 * 1024, raw);
        let gz = matches!(buffered.fill_buf(), Ok(b) if b.starts_with(&[0x1f, 0x8b]));
        let reader: Box<dyn BufRead> = if gz {
            Box::new(BufReader::with_capacity(
                256 * 1024,
                MultiGzDecoder::new(buffered),
            ))
        } else {
            Box::new(buffered)
        };
        let position = || base + count.get();
        match read_one(input, &source, reader, limits, &tx, &position) {
            Ok(true) => {}
            Ok(false) => return, // the receiver is gone
            Err(e) => {
                let _ = tx.blocking_send(FromReader::Failed(format!("{}: {e}", source.display)));
                return;
            }
        }
        base += count.get();
    }
}

/// Returns `Ok(false)` when the receiver was dropped.
fn read_one(
    input: usize,
    source: &Source,
    mut reader: Box<dyn BufRead>,
    limits: Limits,
    tx: &mpsc::Sender<FromReader>,
    position: &dyn Fn() -> u64,
) -> std::io::Result<bool> {
    let mut packer = Packer::new(limits);
    let mut pending = Batch::default();
    let mut buf = Vec::new();
    let mut line = 0u64;
    let send = |batch: Batch| tx.blocking_send(FromReader::Batch(batch)).is_ok();
    loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf)? == 0 {
            break;
        }
        line += 1;
        let at = LineRef { input, line };
        if source.done.contains(line) {
            pending.skipped += 1;
            continue;
        }
        let prepared = match std::str::from_utf8(&buf) {
            Ok(text) => prepare(at, text),
            Err(e) => Err(super::batch::LocalReject {
                code: "invalid_utf8",
                message: format!("line is not UTF-8: {e}"),
            }),
        };
        match prepared {
            Ok(None) => {
                pending.skipped += 1;
                pending.blank.push(at);
            }
            Ok(Some(item)) => {
                if let Some(items) = packer.push(item) {
                    pending.items = items;
                    pending.end_position = position();
                    // The item that closed the batch stays in the packer.
                    if !send(std::mem::take(&mut pending)) {
                        return Ok(false);
                    }
                }
            }
            Err(reject) => pending.local_rejects.push(Rejected {
                at,
                code: reject.code.to_owned(),
                message: reject.message,
                text: String::from_utf8_lossy(&buf).trim_end().to_owned(),
            }),
        }
    }
    pending.items = packer.take();
    pending.end_position = position();
    Ok(send(pending))
}
