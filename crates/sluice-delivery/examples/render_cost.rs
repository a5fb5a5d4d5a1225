//! What rendering a webhook body costs, on one machine, and how much of it
//! is splitting the stored body's top level.
//!
//! `cargo run --release -p sluice-delivery --example render_cost [FILE]`
//!
//! Reads one stored event body (default: a call shaped like
//! `sluice-bench`'s, as ingest stores it), then times
//! [`sluice_delivery::payload::render_event`] (the bytes sent and signed)
//! and, beside it, the top-level split it starts with
//! ([`sluice_model::RawTop::parse`]) and one fixed-point scan of the whole
//! body. Prints microseconds per call. BENCHMARKS.md, "Measured choices",
//! quotes this program's output (why rendering in one pass was not taken).

use std::hint::black_box;
use std::time::Instant;

use sluice_delivery::payload::render_event;
use sluice_model::RawTop;
use sluice_signing::json::is_fixed_point;

/// A call shaped like `sluice-bench`'s, as ingest stores it (shared with
/// `sluice-store`'s `body_codec` example).
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
    let body = match std::env::args().nth(1) {
        Some(path) => std::fs::read_to_string(path)?,
        None => SAMPLE.to_owned(),
    };
    let rendered = render_event(&body)?;
    let render = per_call(|| {
        black_box(render_event(black_box(&body)).ok());
    });
    let split = per_call(|| {
        black_box(RawTop::parse(black_box(&body)).map(|top| top.entries().count()));
    });
    let scan = per_call(|| {
        black_box(is_fixed_point(black_box(&body)));
    });
    println!(
        "stored body: {} bytes; webhook body: {} bytes",
        body.len(),
        rendered.len()
    );
    println!("render {render:.2} us; of it the top-level split {split:.2} us");
    println!("one fixed-point scan of the whole body: {scan:.2} us");
    Ok(())
}
