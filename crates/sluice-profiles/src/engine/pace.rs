//! Stepping aside for ingest.
//!
//! The engine is a consumer of committed events: ingest never waits for it.
//! With SQLite both write through one writer thread (and share two cores),
//! so an engine step taken during an ingest burst takes its time from
//! ingest. The engine therefore reads how fast ingest appends
//! ([`sluice_store::ProfileStore::ingest_write_load`], over each second)
//! and, above [`EVENTS_ABOVE`] events a second, defers its rounds:
//! - with definitions, for at most [`MAX_DEFER`] since its last round: it
//!   still moves one batch a second during the burst, and catches up at
//!   full speed after it;
//! - with none, until the burst is over: nothing is sent, so only the
//!   profile lookup and a later backfill wait for it.
//!
//! Below the threshold nothing is deferred: at 2,000 events a second (the
//! rate issue 11 asks the engine to follow within a second) the engine runs
//! every round.

use std::time::{Duration, Instant};

use sluice_store::WriteLoad;

/// Ingest rate (events a second) above which the engine defers: five times
/// the rate it must follow in real time.
pub const EVENTS_ABOVE: f64 = 10_000.0;
/// Longest the engine defers after its last round.
pub const MAX_DEFER: Duration = Duration::from_secs(1);
/// Span the load is measured over.
const SAMPLE: Duration = Duration::from_secs(1);

/// Ingest's load over one span.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Load {
    pub events_per_sec: f64,
}

impl Load {
    /// The load between two readings `span` apart.
    pub fn between(then: WriteLoad, now: WriteLoad, span: Duration) -> Load {
        let events = now.events.saturating_sub(then.events);
        Load {
            events_per_sec: events as f64 / span.as_secs_f64().max(1e-3),
        }
    }

    pub fn burst(self) -> bool {
        self.events_per_sec > EVENTS_ABOVE
    }
}

/// Whether to defer a round (pure).
pub fn defer(load: Load, definitions: bool, since_last_round: Duration) -> bool {
    load.burst() && (!definitions || since_last_round < MAX_DEFER)
}

/// The writer's load, measured between readings.
pub struct Pace {
    sampled_at: Instant,
    then: WriteLoad,
    load: Load,
    last_round: Instant,
}

impl Pace {
    pub fn new(now: WriteLoad) -> Pace {
        let at = Instant::now();
        Pace {
            sampled_at: at,
            then: now,
            load: Load::default(),
            last_round: at,
        }
    }

    /// Takes a reading of ingest's load; returns whether the round should
    /// be deferred. A round that goes ahead counts from now.
    pub fn defer(&mut self, reading: WriteLoad, definitions: bool) -> bool {
        let at = Instant::now();
        let span = at.duration_since(self.sampled_at);
        if span >= SAMPLE {
            self.load = Load::between(self.then, reading, span);
            self.sampled_at = at;
            self.then = reading;
        }
        let deferred = defer(self.load, definitions, at.duration_since(self.last_round));
        if !deferred {
            self.last_round = at;
        }
        deferred
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(events_per_sec: f64) -> Load {
        Load { events_per_sec }
    }

    #[test]
    fn defers_only_in_a_burst_and_with_definitions_never_past_a_second() {
        let now = Duration::from_millis(10);
        assert!(defer(load(80_000.0), true, now));
        assert!(!defer(load(80_000.0), true, MAX_DEFER), "a round a second");
        assert!(
            defer(load(80_000.0), false, MAX_DEFER * 10),
            "nothing to send"
        );
        assert!(
            !defer(load(2_000.0), true, now),
            "at 2,000 events a second the engine keeps up"
        );
        assert!(!defer(load(2_000.0), false, now));
    }

    #[test]
    fn the_load_is_taken_between_two_readings() {
        let then = WriteLoad {
            events: 20,
            ..WriteLoad::default()
        };
        let now = WriteLoad {
            events: 20_020,
            ..WriteLoad::default()
        };
        let l = Load::between(then, now, Duration::from_millis(200));
        assert!((l.events_per_sec - 100_000.0).abs() < 1e-6);
        assert!(l.burst());
        assert_eq!(Load::between(now, now, SAMPLE), Load::default());
    }

    #[test]
    fn a_round_that_goes_ahead_restarts_the_deferral() {
        let mut pace = Pace::new(WriteLoad::default());
        assert!(
            !pace.defer(WriteLoad::default(), true),
            "no load measured yet"
        );
        pace.load = load(80_000.0);
        pace.sampled_at = Instant::now();
        assert!(pace.defer(WriteLoad::default(), true), "a round just ran");
        pace.last_round = Instant::now() - MAX_DEFER;
        assert!(!pace.defer(WriteLoad::default(), true));
        assert!(
            pace.defer(WriteLoad::default(), true),
            "counted from that round"
        );
    }
}
