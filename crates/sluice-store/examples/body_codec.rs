//! What compressing a stored body costs and saves, on one machine.
//!
//! `cargo run --release -p sluice-store --example body_codec [FILE]`
//!
//! Reads one JSON call (default: a call shaped like `sluice-bench`'s, with
//! the four timestamps Sluice adds), then times the store's codec
//! (`encode_body` / `decode_body`, LZ4 against the built-in dictionary) and,
//! beside it, plain LZ4 without a dictionary. Prints bytes and microseconds
//! per call. BENCHMARKS.md, "Measured choices", quotes this program's output.

use std::hint::black_box;
use std::time::Instant;

use sluice_store::sqlite::{decode_body, encode_body};

/// A call shaped like `sluice-bench`'s, as ingest stores it (shared with
/// `sluice-delivery`'s `render_cost` example).
const SAMPLE: &str = include_str!("../../../bench/samples/stored-track-call.json");

const ROUNDS: u32 = 200_000;

fn per_call(f: impl Fn()) -> f64 {
    let started = Instant::now();
    for _ in 0..ROUNDS {
        f();
    }
    started.elapsed().as_secs_f64() * 1e6 / f64::from(ROUNDS)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let json = match std::env::args().nth(1) {
        Some(path) => std::fs::read_to_string(path)?,
        None => SAMPLE.to_owned(),
    };
    let blob = encode_body(&json).ok_or("the dictionary does not shrink this body")?;
    assert_eq!(decode_body(&blob)?, json);
    let plain = lz4_flex::block::compress(json.as_bytes());
    let encode = per_call(|| {
        black_box(encode_body(black_box(&json)));
    });
    let decode = per_call(|| {
        black_box(decode_body(black_box(&blob)).ok());
    });
    let plain_encode = per_call(|| {
        black_box(lz4_flex::block::compress(black_box(json.as_bytes())));
    });
    println!("body: {} bytes", json.len());
    println!(
        "stored (LZ4, built-in dictionary): {} bytes; compress {encode:.2} us, expand {decode:.2} us",
        blob.len()
    );
    println!(
        "LZ4 without dictionary: {} bytes; compress {plain_encode:.2} us",
        plain.len()
    );
    Ok(())
}
