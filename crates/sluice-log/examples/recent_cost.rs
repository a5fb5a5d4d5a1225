//! What the Kafka shape's deduplication memory costs with 10 million calls
//! inside the window, on one machine.
//!
//! `cargo run --release -p sluice-log --example recent_cost`
//!
//! Fills [`Recent`] with 10,000,000 keys of calls accepted evenly over 23
//! hours of the default 24-hour window, spread over 64 partitions as the
//! topic's default, then asks it about 1,000,000 new calls and 1,000,000
//! retries, then 1,000,000 new calls an hour on, as the oldest leave the
//! window. Prints the memory per call and the nanoseconds per call of
//! each kind, without the key's SHA-256 (which every shape pays).
//! BENCHMARKS.md, "The Kafka shape", quotes this program's output.

use std::hint::black_box;
use std::time::Instant;

use sluice_log::recent::{Recent, key};

const WINDOW_MS: i64 = 24 * 3_600_000;
const HELD: u64 = 10_000_000;
const ASKED: u64 = 1_000_000;
const PARTITIONS: u64 = 64;

fn main() {
    let keys: Vec<u64> = (0..HELD + ASKED)
        .map(|i| key("source", &format!("message-{i}")))
        .collect();
    let span = 23 * 3_600_000 / HELD as i64;
    let base = rss_kb();
    let mut recent = Recent::new(WINDOW_MS, HELD as usize + ASKED as usize);
    let started = Instant::now();
    for (i, k) in keys[..HELD as usize].iter().enumerate() {
        let i = i as u64;
        recent.first((i % PARTITIONS) as i32, *k, i as i64 * span);
    }
    let fill = started.elapsed().as_secs_f64() * 1e9 / HELD as f64;
    let held = recent.held();
    let bytes = recent.bytes();
    let now = HELD as i64 * span;

    let started = Instant::now();
    let mut new = 0;
    for (i, k) in keys[HELD as usize..].iter().enumerate() {
        let i = i as u64;
        new += usize::from(recent.first((i % PARTITIONS) as i32, black_box(*k), now));
    }
    let per_new = started.elapsed().as_secs_f64() * 1e9 / ASKED as f64;

    let started = Instant::now();
    let mut retries = 0;
    for i in (0..HELD).step_by((HELD / ASKED) as usize) {
        let k = keys[i as usize];
        retries += usize::from(!recent.first((i % PARTITIONS) as i32, black_box(k), now));
    }
    let per_retry = started.elapsed().as_secs_f64() * 1e9 / ASKED as f64;

    // Steady: a further 1,000,000 new calls at the filling's rate, an hour
    // on, so that the oldest hours leave the window as they come.
    let later: Vec<u64> = (0..ASKED)
        .map(|i| key("source", &format!("later-{i}")))
        .collect();
    let started = Instant::now();
    for (i, k) in later.iter().enumerate() {
        let i = i as u64;
        let at = WINDOW_MS + i as i64 * span;
        recent.first((i % PARTITIONS) as i32, black_box(*k), at);
    }
    let per_steady = started.elapsed().as_secs_f64() * 1e9 / ASKED as f64;

    println!("calls held: {held} (window 24 h, calls over 23 h, {PARTITIONS} partitions)");
    println!(
        "memory: {:.1} MB, {:.1} bytes a call",
        bytes as f64 / 1e6,
        bytes as f64 / held as f64
    );
    println!("resident: {:.1} MB more", (rss_kb() - base) as f64 / 1e3);
    println!("filling: {fill:.0} ns a call");
    println!("new call: {per_new:.0} ns ({new} of {ASKED} taken as new)");
    println!("retry: {per_retry:.0} ns ({retries} of {ASKED} dropped)");
    println!(
        "new call, the oldest leaving: {per_steady:.0} ns ({} held after)",
        recent.held()
    );
}

/// The process's resident memory, in kB (Linux).
fn rss_kb() -> usize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("VmRSS:"))?.to_owned();
            line.split_whitespace().nth(1)?.parse().ok()
        })
        .unwrap_or(0)
}
