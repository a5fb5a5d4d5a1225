//! What taking each event's shape (and outline) costs in the ingest parse,
//! on one machine.
//!
//! `cargo run --release -p sluice-model --example shape_cost`
//!
//! Parses a batch of 100 calls shaped like `sluice-bench`'s, with
//! `parse_request` and with `parse_request_with_shapes` (what ingest uses
//! when the schema, rules or filters need shapes), and prints microseconds
//! per event for each, three rounds. The system allocator, not the
//! server's mimalloc, so allocation weighs more here than in `sluice`.
//! Compare the two figures, not either alone with the server's.

use std::hint::black_box;
use std::time::Instant;

use sluice_model::{Endpoint, Limits, RequestContext, parse_request, parse_request_with_shapes};

/// A call shaped like `sluice-bench`'s, as ingest stores it.
const SAMPLE: &str = include_str!("../../../bench/samples/stored-track-call.json");

const BATCHES: u32 = 2_000;
const EVENTS: u32 = 100;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ctx = RequestContext {
        received_at: chrono::Utc::now(),
        client_ip: None,
    };
    let items = vec![SAMPLE; EVENTS as usize].join(",");
    let batch = format!("{{\"batch\":[{items}]}}");
    let limits = Limits::default();
    let per_event = |shapes: bool| {
        let parse = if shapes {
            parse_request_with_shapes
        } else {
            parse_request
        };
        let started = Instant::now();
        for _ in 0..BATCHES {
            black_box(parse(Endpoint::Batch, black_box(batch.as_bytes()), &ctx, &limits).ok());
        }
        started.elapsed().as_secs_f64() * 1e6 / f64::from(BATCHES * EVENTS)
    };
    parse_request_with_shapes(Endpoint::Batch, batch.as_bytes(), &ctx, &limits)?;
    for _ in 0..3 {
        let plain = per_event(false);
        let shaped = per_event(true);
        println!(
            "per event: parse {plain:.3} us, with shapes {shaped:.3} us (+{:.3})",
            shaped - plain
        );
    }
    Ok(())
}
