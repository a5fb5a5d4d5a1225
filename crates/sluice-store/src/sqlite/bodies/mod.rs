//! Event bodies at rest: LZ4 against a dictionary of Segment's vocabulary
//! (schema version 12).
//!
//! Why: the stored JSON was half of the disk a delivered event costs (536 of
//! 1,335 bytes, BENCHMARKS.md, "Measured choices"), and most of it is the same
//! keys in every call: `"context":{"library":{"name":"analytics-…`, four
//! timestamps, the Segment Spec's property names. A general-purpose compressor finds
//! little to share inside one 500-byte call (LZ4 alone: 541 to 427 bytes);
//! seeded with the vocabulary every Segment call draws on, it has most of a
//! call's keys before it starts (541 to about 240). LZ4 rather than zstd or
//! deflate: about 1.3 µs to compress and 0.2 µs to expand such a call, on
//! the caller's task, not the single writer's (zstd with the same dictionary
//! was 3.7 and 1.6 µs for 200 bytes).
//!
//! Blobs are written by our own LZ4 block encoder (`lz4`), which builds the
//! dictionary's hash table once instead of for every call; they are read
//! by lz4_flex's decoder.
//!
//! # Layout
//! The `events.body` column holds either
//! - TEXT: the JSON itself (every body written before version 12, bodies the
//!   dictionary does not shrink, and the store's own small notices), or
//! - BLOB: `[FORMAT_LZ4_V1][length as LEB128][LZ4 block]`, where the block
//!   was compressed against `dictionary-v1.txt` and expands to `length`
//!   bytes of UTF-8 JSON.
//!
//! # Invariants
//! - The dictionary's bytes are part of the file format: a test pins their
//!   hash. A better dictionary is a new format byte beside this one, never an
//!   edit.
//! - Readers never see the encoding: every read of a body goes through
//!   [`read`] (or, inside SQL, the `body_json(body)` function that
//!   [`register`] installs on each connection).
//! - A blob that does not decode is an error, never an empty or partial body.

use std::sync::LazyLock;

use rusqlite::Connection;
use rusqlite::functions::FunctionFlags;
use rusqlite::types::{Type, ValueRef};

mod lz4;
#[cfg(test)]
mod tests;

/// The only format byte so far: an LZ4 block against `dictionary-v1.txt`.
const FORMAT_LZ4_V1: u8 = 1;

/// Segment's vocabulary: spec fields, context keys, library names and the
/// e-commerce spec's events, in the order Sluice writes them.
const DICTIONARY_V1: &[u8] = include_bytes!("dictionary-v1.txt");

/// Larger than any body ingest accepts (its caps are in KB); a length above
/// it can only be corruption, refused before allocating.
const MAX_BODY: usize = 16 << 20;

/// The dictionary's hash table, built on first use (see `lz4`).
static ENCODER_V1: LazyLock<lz4::Encoder> = LazyLock::new(|| lz4::Encoder::new(DICTIONARY_V1));

/// The stored form of `json`: `Some(blob)` when compression saves space,
/// `None` to store the text as it is. Pure; callers run it off the writer.
pub(crate) fn encode(json: &str) -> Option<Vec<u8>> {
    let input = json.as_bytes();
    if input.len() < 64 || input.len() > MAX_BODY {
        return None;
    }
    let bound = lz4_flex::block::get_maximum_output_size(input.len());
    let mut out = Vec::with_capacity(1 + 4 + bound);
    out.push(FORMAT_LZ4_V1);
    push_leb128(&mut out, input.len());
    let header = out.len();
    if ENCODER_V1.compress(input, &mut out).is_none() {
        // Over 63 KB with the dictionary: lz4_flex's encoder, whose table
        // setup is small beside such an input.
        out.resize(header + bound, 0);
        let written =
            lz4_flex::block::compress_into_with_dict(input, &mut out[header..], DICTIONARY_V1)
                .ok()?;
        out.truncate(header + written);
    }
    (out.len() < input.len()).then_some(out)
}

/// Why a stored body could not be read back.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BodyError {
    #[error("stored body has unknown format {0}")]
    Format(u8),
    #[error("stored body is truncated or corrupt")]
    Corrupt,
    #[error("stored body is not UTF-8")]
    NotUtf8,
}

/// The JSON of a stored body, whichever form it was written in.
pub(crate) fn decode(stored: &[u8]) -> Result<String, BodyError> {
    let (&format, rest) = stored.split_first().ok_or(BodyError::Corrupt)?;
    if format != FORMAT_LZ4_V1 {
        return Err(BodyError::Format(format));
    }
    let (len, block) = read_leb128(rest).ok_or(BodyError::Corrupt)?;
    if len > MAX_BODY {
        return Err(BodyError::Corrupt);
    }
    let mut out = vec![0; len];
    let n = lz4_flex::block::decompress_into_with_dict(block, &mut out, DICTIONARY_V1)
        .map_err(|_| BodyError::Corrupt)?;
    if n != len {
        return Err(BodyError::Corrupt);
    }
    String::from_utf8(out).map_err(|_| BodyError::NotUtf8)
}

/// Reads body column `idx` of a row.
pub(super) fn read(row: &rusqlite::Row<'_>, idx: usize) -> rusqlite::Result<String> {
    from_value(row.get_ref(idx)?, idx)
}

fn from_value(value: ValueRef<'_>, idx: usize) -> rusqlite::Result<String> {
    match value {
        ValueRef::Text(text) => String::from_utf8(text.to_vec())
            .map_err(|e| rusqlite::Error::FromSqlConversionFailure(idx, Type::Text, e.into())),
        ValueRef::Blob(blob) => decode(blob)
            .map_err(|e| rusqlite::Error::FromSqlConversionFailure(idx, Type::Blob, e.into())),
        other => Err(rusqlite::Error::InvalidColumnType(
            idx,
            "body".into(),
            other.data_type(),
        )),
    }
}

/// Installs `body_json(body)` on `conn`: the JSON text of a stored body, for
/// SQL that looks inside bodies (`json_extract(body_json(body), '$.userId')`).
pub(crate) fn register(conn: &Connection) -> rusqlite::Result<()> {
    conn.create_scalar_function(
        "body_json",
        1,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        |ctx| match ctx.get_raw(0) {
            ValueRef::Null => Ok(None),
            value => from_value(value, 0)
                .map(Some)
                .map_err(|e| rusqlite::Error::UserFunctionError(e.into())),
        },
    )
}

fn push_leb128(out: &mut Vec<u8>, mut n: usize) {
    while n >= 0x80 {
        out.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn read_leb128(bytes: &[u8]) -> Option<(usize, &[u8])> {
    let mut n: usize = 0;
    for (i, &b) in bytes.iter().enumerate().take(4) {
        n |= usize::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((n, &bytes[i + 1..]));
        }
    }
    None
}
