//! What recording a request's calls in the schema aggregate costs, on one
//! machine.
//!
//! `cargo run --release -p sluice-schema --example observe_cost`
//!
//! Feeds [`Tracker::observe`] the shape of a call like `sluice-bench`'s (an
//! event with five properties), as requests of one call and as batches of
//! 100 such calls, and prints nanoseconds per call for each. BENCHMARKS.md,
//! "Measured choices", quotes this program's output.

use std::hint::black_box;
use std::time::Instant;

use sluice_schema::{Shape, Tracker};

/// A call shaped like `sluice-bench`'s, as ingest stores it.
const SAMPLE: &str = include_str!("../../../bench/samples/stored-track-call.json");

const CALLS: u32 = 1_000_000;

/// Nanoseconds per call, observing `CALLS` calls in requests of `batch`.
fn per_call(batch: u32) -> f64 {
    let shapes: Vec<Shape> = (0..batch).map(|_| Shape::of(SAMPLE, "track")).collect();
    let tracker = Tracker::new(10_000);
    let started = Instant::now();
    for i in 0..CALLS / batch {
        tracker.observe("source", black_box(&shapes), i64::from(i));
    }
    started.elapsed().as_secs_f64() * 1e9 / f64::from(CALLS)
}

fn main() {
    for _ in 0..3 {
        println!(
            "Tracker::observe: {:.0} ns per call alone, {:.0} ns per call in a batch of 100",
            per_call(1),
            per_call(100)
        );
    }
}
