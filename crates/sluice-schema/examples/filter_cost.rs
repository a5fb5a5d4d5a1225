//! What the schema scenario's five destination filters cost per event, on
//! one machine.
//!
//! `cargo run --release -p sluice-schema --example filter_cost`
//!
//! Parses a call shaped like `sluice-bench`'s as ingest does (shape and
//! outline taken), applies the filters of `sluice-bench --only schema`
//! (filters arm) to the stored text, and prints the microseconds per event
//! of [`FilterSet::apply`] reading the text alone and reading it through the
//! outline. BENCHMARKS.md, "Measured choices", quotes this program's output.

use std::hint::black_box;
use std::time::Instant;

use sluice_model::{Endpoint, EventType, Limits, RequestContext, parse_request_with_shapes};
use sluice_schema::read::read_paths;
use sluice_schema::{FilterOutcome, FilterSet, PropertyPath};

/// A call shaped like `sluice-bench`'s, as ingest stores it.
const SAMPLE: &str = include_str!("../../../bench/samples/stored-track-call.json");

/// The filters of `sluice-bench --only schema`'s filters arm.
const FILTERS: &str = include_str!("../../../bench/samples/schema-filters.json");

const ROUNDS: u32 = 200_000;

fn per_call(f: impl Fn()) -> f64 {
    let started = Instant::now();
    for _ in 0..ROUNDS {
        f();
    }
    started.elapsed().as_secs_f64() * 1e6 / f64::from(ROUNDS)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let set = FilterSet::parse(&serde_json::from_str(FILTERS)?)?;
    let ctx = RequestContext {
        received_at: chrono::Utc::now(),
        client_ip: None,
    };
    let endpoint = Endpoint::Single(EventType::Track);
    let envelope =
        parse_request_with_shapes(endpoint, SAMPLE.as_bytes(), &ctx, &Limits::default())?;
    let event = envelope.events.first().ok_or("no event")?;
    let shape = event.shape.as_ref().ok_or("no shape")?;
    let outline = event.outline.as_ref().ok_or("no outline")?;
    let body = event.json.as_str();
    assert_eq!(set.apply(shape, body, None), FilterOutcome::Send);
    assert_eq!(set.apply(shape, body, Some(outline)), FilterOutcome::Send);
    let text = per_call(|| {
        black_box(set.apply(black_box(shape), black_box(body), None));
    });
    let outlined = per_call(|| {
        black_box(set.apply(black_box(shape), black_box(body), Some(outline)));
    });
    let paths = ["properties.coupon", "properties.revenue", "traits.ssn"]
        .map(|p| PropertyPath::parse(p, "path"))
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?;
    let paths: Vec<&PropertyPath> = paths.iter().collect();
    let read_text = per_call(|| {
        black_box(read_paths(black_box(body), None, &paths));
    });
    let read_outlined = per_call(|| {
        black_box(read_paths(black_box(body), Some(outline), &paths));
    });
    println!("stored body: {} bytes", body.len());
    println!(
        "read_paths, the 3 paths the shape leaves live: {read_text:.3} us; through the outline: {read_outlined:.3} us"
    );
    println!("FilterSet::apply, 5 filters, reading the text: {text:.3} us per event");
    println!("FilterSet::apply, 5 filters, through the outline: {outlined:.3} us per event");
    Ok(())
}
