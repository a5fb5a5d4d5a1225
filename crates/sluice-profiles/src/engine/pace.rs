//! Stepping aside for ingest.
//!
//! The engine is a consumer of committed events: ingest never waits for it.
//! With SQLite both write through one writer thread, so an engine step
//! committed while ingest saturates that writer takes its time from
//! ingest. The engine therefore reads how ingest loads the writer
//! ([`sluice_store::ProfileStore::ingest_write_load`]) over each second and
//! defers its rounds while ingest is at full speed: the writer busy with
//! ingest more than [`BUSY_ABOVE`] of the time the engine leaves it, AND
//! ingest above [`EVENTS_ABOVE`] events a second. Busy alone is not full
//! speed: 2,000 single calls a second, each an fsync-bound commit of its
//! own, can keep the writer busy with room to spare (group commit absorbs
//! more), and there the engine must keep its latency under a second.
//!
//! A deferral never lasts longer than [`MAX_DEFER`] since the engine's last
//! round: under ingest at full speed it still moves one batch a second, and
//! it catches up at full speed once the burst is over.

use std::time::{Duration, Instant};

use sluice_store::WriteLoad;

/// Share of the time the engine leaves the writer that ingest must keep it
/// busy for the engine to defer.
pub const BUSY_ABOVE: f64 = 0.85;
/// Ingest rate (events a second) above which the engine may defer: five
/// times the rate it must follow in real time (2,000 a second, issue 11).
pub const EVENTS_ABOVE: f64 = 10_000.0;
/// Longest the engine defers after its last round.
pub const MAX_DEFER: Duration = Duration::from_secs(1);
/// Span the load is measured over.
const SAMPLE: Duration = Duration::from_secs(1);

/// The writer's load over one span.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Load {
    pub busy_share: f64,
    pub events_per_sec: f64,
}

impl Load {
    /// The load between two readings `span` apart.
    pub fn between(then: WriteLoad, now: WriteLoad, span: Duration) -> Load {
        let busy = now.busy.saturating_sub(then.busy);
        let events = now.events.saturating_sub(then.events);
        let engine = now.background.saturating_sub(then.background);
        let left = span.saturating_sub(engine).as_secs_f64().max(1e-3);
        Load {
            busy_share: busy.as_secs_f64() / left,
            events_per_sec: events as f64 / span.as_secs_f64().max(1e-3),
        }
    }

    pub fn full_speed(self) -> bool {
        self.busy_share > BUSY_ABOVE && self.events_per_sec > EVENTS_ABOVE
    }
}

/// Whether to defer a round (pure).
pub fn defer(load: Load, since_last_round: Duration) -> bool {
    load.full_speed() && since_last_round < MAX_DEFER
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

    /// Takes a reading of the writer's load; returns whether the round
    /// should be deferred. A round that goes ahead counts from now.
    pub fn defer(&mut self, reading: WriteLoad) -> bool {
        let at = Instant::now();
        let span = at.duration_since(self.sampled_at);
        if span >= SAMPLE {
            self.load = Load::between(self.then, reading, span);
            self.sampled_at = at;
            self.then = reading;
        }
        let deferred = defer(self.load, at.duration_since(self.last_round));
        if !deferred {
            self.last_round = at;
        }
        deferred
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(busy_share: f64, events_per_sec: f64) -> Load {
        Load {
            busy_share,
            events_per_sec,
        }
    }

    #[test]
    fn defers_only_at_full_speed_and_never_past_the_longest_deferral() {
        let now = Duration::from_millis(10);
        assert!(defer(load(0.95, 80_000.0), now));
        assert!(
            !defer(load(0.95, 80_000.0), MAX_DEFER),
            "a round a second at least"
        );
        assert!(!defer(load(0.2, 80_000.0), now), "a writer with room");
        assert!(
            !defer(load(0.95, 2_000.0), now),
            "busy with fsyncs at 2,000 calls a second: the engine keeps up"
        );
    }

    #[test]
    fn the_load_is_taken_between_two_readings() {
        let then = WriteLoad {
            busy: Duration::from_millis(100),
            groups: 10,
            events: 20,
            background: Duration::from_millis(10),
        };
        let now = WriteLoad {
            busy: Duration::from_millis(250),
            groups: 20,
            events: 20_020,
            background: Duration::from_millis(30),
        };
        // 150 ms of ingest in the 180 ms the engine left.
        let l = Load::between(then, now, Duration::from_millis(200));
        assert!((l.busy_share - 150.0 / 180.0).abs() < 1e-9);
        assert!((l.events_per_sec - 100_000.0).abs() < 1e-6);
        assert!(!l.full_speed(), "not busy enough");
        let full = Load::between(then, now, Duration::from_millis(170));
        assert!(full.full_speed());
        let idle = Load::between(now, now, Duration::from_millis(200));
        assert_eq!(idle, Load::default());
    }

    #[test]
    fn a_round_that_goes_ahead_restarts_the_deferral() {
        let mut pace = Pace::new(WriteLoad::default());
        assert!(!pace.defer(WriteLoad::default()), "no load measured yet");
        pace.load = load(0.95, 80_000.0);
        pace.sampled_at = Instant::now();
        assert!(
            pace.defer(WriteLoad::default()),
            "full speed, and a round just ran"
        );
        pace.last_round = Instant::now() - MAX_DEFER;
        assert!(!pace.defer(WriteLoad::default()));
        assert!(pace.defer(WriteLoad::default()), "counted from that round");
    }
}
