//! Stepping aside for ingest and delivery.
//!
//! The engine is a consumer of committed events: ingest never waits for it.
//! With SQLite the engine, ingest and delivery write through one writer
//! thread (and share two cores), so engine work during an ingest burst or a
//! delivery backlog takes its time from them. The engine therefore reads
//! two rates from the writer ([`sluice_store::ProfileStore::write_load`],
//! over each second): events appended by ingest, and the share of the time
//! the writer spent on work other than the engine's.
//!
//! - Above [`EVENTS_ABOVE`] ingest events a second it works at most a share
//!   of the time: after a round that took `t`, it rests long enough for `t`
//!   to be [`SHARE_WITH_DEFINITIONS`] (or [`SHARE_WITHOUT`] when there is
//!   nothing to send) of the time, and never more than [`MAX_REST`].
//! - Without definitions the engine's work is bookkeeping nobody waits on
//!   (the profile lookup, a later backfill), so it also keeps to
//!   [`SHARE_WITHOUT`] while others hold the writer more than
//!   [`BUSY_ABOVE`] of the time (a delivery backlog draining), and to
//!   [`SHARE_WITHOUT_BELOW_BURST`] while ingest runs at all, so that a
//!   backlog left by a burst is not caught up at the expense of the calls
//!   that follow.
//! - With definitions the engine's messages are part of delivery's work,
//!   so it does not step aside for delivery.
//!
//! - Without definitions, while ingest runs or others hold the writer, a
//!   step reads at most [`SMALL_STEP`] events, so that each commit holds the
//!   writer only briefly (a tail of slow calls otherwise gathers behind the
//!   engine's large commits).
//!
//! So a burst costs ingest and delivery a bounded share, the engine still
//! moves during it, and it catches up at full speed once the burst is over.
//! Below the thresholds nothing is deferred: at 2,000 events a second (the
//! load at which an event's trait and audience changes must reach the
//! receiver within a second, a budget in BENCHMARKS.md) the engine with
//! definitions runs every round.

use std::time::{Duration, Instant};

use sluice_store::WriteLoad;

/// Ingest rate (events a second) above which the engine defers: five times
/// the rate it must follow in real time.
pub const EVENTS_ABOVE: f64 = 10_000.0;
/// The engine's share of the time during a burst, with definitions.
pub const SHARE_WITH_DEFINITIONS: f64 = 0.10;
/// The same without definitions (nothing is sent; only the profile lookup
/// and a later backfill wait).
pub const SHARE_WITHOUT: f64 = 0.05;
/// Without definitions, the share while ingest is active below a burst:
/// enough to follow a few thousand events a second, while a backlog left
/// by a burst does not take the writer from the calls that follow it.
pub const SHARE_WITHOUT_BELOW_BURST: f64 = 0.25;
/// Share of the time others hold the writer above which an engine without
/// definitions keeps to [`SHARE_WITHOUT`].
pub const BUSY_ABOVE: f64 = 0.5;
/// Without definitions, the most events one step reads while others use
/// the writer: a step's commit holds the writer, and a short hold keeps the
/// calls and sends queued behind it fast.
pub const SMALL_STEP: u32 = 100;
/// Longest rest between two rounds.
pub const MAX_REST: Duration = Duration::from_secs(5);
/// Span the load is measured over.
const SAMPLE: Duration = Duration::from_secs(1);

/// Others' load over one span.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Load {
    pub events_per_sec: f64,
    /// Share of the span the writer spent on others' work.
    pub busy: f64,
}

impl Load {
    /// The load between two readings `span` apart.
    pub fn between(then: WriteLoad, now: WriteLoad, span: Duration) -> Load {
        let events = now.events.saturating_sub(then.events);
        let secs = span.as_secs_f64().max(1e-3);
        let busy = now.foreground.saturating_sub(then.foreground);
        Load {
            events_per_sec: events as f64 / secs,
            busy: busy.as_secs_f64() / secs,
        }
    }

    pub fn burst(self) -> bool {
        self.events_per_sec > EVENTS_ABOVE
    }

    pub fn active(self) -> bool {
        self.events_per_sec > 0.0
    }

    pub fn contended(self) -> bool {
        self.busy > BUSY_ABOVE
    }
}

/// How long to rest after a round that took `took`, to keep the engine's
/// share of the time (pure).
pub fn rest(load: Load, definitions: bool, took: Duration) -> Duration {
    let share = if definitions {
        if !load.burst() {
            return Duration::ZERO;
        }
        SHARE_WITH_DEFINITIONS
    } else if load.burst() || load.contended() {
        SHARE_WITHOUT
    } else if load.active() {
        SHARE_WITHOUT_BELOW_BURST
    } else {
        return Duration::ZERO;
    };
    took.mul_f64((1.0 - share) / share).min(MAX_REST)
}

/// Others' load, measured between readings, and the engine's last round.
pub struct Pace {
    sampled_at: Instant,
    then: WriteLoad,
    load: Load,
    /// When the last round ended, and how long it took.
    last_end: Instant,
    last_took: Duration,
}

impl Pace {
    pub fn new(now: WriteLoad) -> Pace {
        let at = Instant::now();
        Pace {
            sampled_at: at,
            then: now,
            load: Load::default(),
            last_end: at,
            last_took: Duration::ZERO,
        }
    }

    /// How many events the next step may read, of the configured `batch`.
    pub fn step(&self, definitions: bool, batch: u32) -> u32 {
        if !definitions && (self.load.active() || self.load.contended()) {
            batch.min(SMALL_STEP)
        } else {
            batch
        }
    }

    /// A round that went ahead took `took`.
    pub fn ran(&mut self, took: Duration) {
        self.last_end = Instant::now();
        self.last_took = took;
    }

    /// Takes a reading of others' load; returns whether the next round
    /// should wait.
    pub fn defer(&mut self, reading: WriteLoad, definitions: bool) -> bool {
        let at = Instant::now();
        let span = at.duration_since(self.sampled_at);
        if span >= SAMPLE {
            self.load = Load::between(self.then, reading, span);
            self.sampled_at = at;
            self.then = reading;
        }
        at.duration_since(self.last_end) < rest(self.load, definitions, self.last_took)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(events_per_sec: f64) -> Load {
        Load {
            events_per_sec,
            busy: 0.0,
        }
    }

    #[test]
    fn rests_only_in_a_burst_for_the_engine_to_keep_its_share() {
        let took = Duration::from_millis(100);
        assert_eq!(rest(load(80_000.0), true, took), Duration::from_millis(900));
        assert_eq!(
            rest(load(80_000.0), false, took),
            Duration::from_millis(1900)
        );
        assert_eq!(
            rest(load(80_000.0), true, Duration::from_secs(60)),
            MAX_REST
        );
        assert_eq!(
            rest(load(2_000.0), true, took),
            Duration::ZERO,
            "at 2,000 events a second the engine keeps up"
        );
        assert_eq!(
            rest(load(2_000.0), false, took),
            Duration::from_millis(300),
            "without definitions a quarter of the time while ingest runs"
        );
        assert_eq!(rest(load(0.0), false, took), Duration::ZERO);
    }

    #[test]
    fn without_definitions_steps_aside_while_others_hold_the_writer() {
        let took = Duration::from_millis(100);
        let draining = Load {
            events_per_sec: 0.0,
            busy: 0.8,
        };
        assert_eq!(rest(draining, false, took), Duration::from_millis(1900));
        assert_eq!(
            rest(draining, true, took),
            Duration::ZERO,
            "with definitions the engine's messages are delivery's work too"
        );
        let light = Load {
            events_per_sec: 0.0,
            busy: 0.2,
        };
        assert_eq!(rest(light, false, took), Duration::ZERO);
    }

    #[test]
    fn without_definitions_steps_are_small_while_others_write() {
        let mut pace = Pace::new(WriteLoad::default());
        assert_eq!(pace.step(false, 2000), 2000, "idle: full steps");
        pace.load = load(2_000.0);
        assert_eq!(pace.step(false, 2000), SMALL_STEP);
        assert_eq!(pace.step(true, 2000), 2000, "definitions keep full steps");
        pace.load = Load {
            events_per_sec: 0.0,
            busy: 0.9,
        };
        assert_eq!(pace.step(false, 2000), SMALL_STEP);
        assert_eq!(pace.step(false, 100), 100);
    }

    #[test]
    fn the_load_is_taken_between_two_readings() {
        let then = WriteLoad {
            events: 20,
            foreground: Duration::from_millis(50),
        };
        let now = WriteLoad {
            events: 20_020,
            foreground: Duration::from_millis(170),
        };
        let l = Load::between(then, now, Duration::from_millis(200));
        assert!((l.events_per_sec - 100_000.0).abs() < 1e-6);
        assert!((l.busy - 0.6).abs() < 1e-9);
        assert!(l.burst());
        assert!(l.contended());
        assert_eq!(Load::between(now, now, SAMPLE), Load::default());
    }

    #[test]
    fn a_round_waits_out_the_rest_of_the_last_one() {
        let mut pace = Pace::new(WriteLoad::default());
        assert!(
            !pace.defer(WriteLoad::default(), true),
            "no load measured yet"
        );
        pace.load = load(80_000.0);
        pace.sampled_at = Instant::now();
        pace.ran(Duration::from_millis(200));
        assert!(pace.defer(WriteLoad::default(), true), "resting");
        pace.last_end = Instant::now() - Duration::from_secs(2);
        assert!(!pace.defer(WriteLoad::default(), true), "rested 1.8 s");
    }
}
