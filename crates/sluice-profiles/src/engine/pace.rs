//! Stepping aside for ingest.
//!
//! The engine is a consumer of committed events: ingest never waits for it.
//! With SQLite both write through one writer thread, so an engine step
//! committed while ingest saturates that writer takes its time from
//! ingest. The engine therefore reads how ingest loads the writer
//! ([`sluice_store::ProfileStore::ingest_write_load`]) and defers its
//! writes while ingest saturates it: busy more than [`BUSY_ABOVE`] of the
//! time AND with callers queueing ([`QUEUED_JOBS`] or more ingest calls per
//! group on average). Busy alone is not saturation: 2,000 single calls a
//! second, each its own fsync-bound commit, keep the writer half busy with
//! room to spare, since a step joins their groups for free. Delivery's and
//! the engine's own writes are not ingest: the engine does not defer to
//! them (a first sync's messages being delivered must not slow the sync).
//!
//! A deferral never lasts longer than [`MAX_DEFER`] since the engine's last
//! round: under ingest at full speed it still moves one batch a second, and
//! it catches up at full speed once the burst is over.

use std::time::{Duration, Instant};

use sluice_store::WriteLoad;

/// Share of wall time other work keeps the writer busy above which the
/// engine may defer.
pub const BUSY_ABOVE: f64 = 0.5;
/// Mean ingest calls per group at or above which callers are queueing.
pub const QUEUED_JOBS: f64 = 8.0;
/// Longest the engine defers after its last round.
pub const MAX_DEFER: Duration = Duration::from_secs(1);
/// Shortest span the load is measured over.
const SAMPLE: Duration = Duration::from_millis(200);

/// The writer's load over one span.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Load {
    pub busy_share: f64,
    pub jobs_per_group: f64,
}

impl Load {
    /// The load between two readings `span` apart.
    pub fn between(then: WriteLoad, now: WriteLoad, span: Duration) -> Load {
        let busy = now.busy.saturating_sub(then.busy);
        let groups = now.groups.saturating_sub(then.groups);
        let jobs = now.jobs.saturating_sub(then.jobs);
        Load {
            busy_share: busy.as_secs_f64() / span.as_secs_f64().max(1e-9),
            jobs_per_group: if groups == 0 {
                0.0
            } else {
                jobs as f64 / groups as f64
            },
        }
    }

    pub fn saturated(self) -> bool {
        self.busy_share > BUSY_ABOVE && self.jobs_per_group >= QUEUED_JOBS
    }
}

/// Whether to defer a round (pure).
pub fn defer(load: Load, since_last_round: Duration) -> bool {
    load.saturated() && since_last_round < MAX_DEFER
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

    fn load(busy_share: f64, jobs_per_group: f64) -> Load {
        Load {
            busy_share,
            jobs_per_group,
        }
    }

    #[test]
    fn defers_only_while_saturated_and_never_past_the_longest_deferral() {
        let now = Duration::from_millis(10);
        assert!(defer(load(0.9, 30.0), now));
        assert!(
            !defer(load(0.9, 30.0), MAX_DEFER),
            "a round a second at least"
        );
        assert!(!defer(load(0.2, 30.0), now), "a quiet writer");
        assert!(
            !defer(load(0.7, 1.2), now),
            "busy with one fsync per call, but nobody queues"
        );
    }

    #[test]
    fn the_load_is_taken_between_two_readings() {
        let then = WriteLoad {
            busy: Duration::from_millis(100),
            groups: 10,
            jobs: 20,
        };
        let now = WriteLoad {
            busy: Duration::from_millis(250),
            groups: 20,
            jobs: 120,
        };
        let l = Load::between(then, now, Duration::from_millis(200));
        assert!((l.busy_share - 0.75).abs() < 1e-9);
        assert!((l.jobs_per_group - 10.0).abs() < 1e-9);
        assert!(l.saturated());
        let idle = Load::between(now, now, Duration::from_millis(200));
        assert_eq!(idle, Load::default());
    }

    #[test]
    fn a_round_that_goes_ahead_restarts_the_deferral() {
        let mut pace = Pace::new(WriteLoad::default());
        assert!(!pace.defer(WriteLoad::default()), "no load measured yet");
        pace.load = load(0.9, 30.0);
        pace.sampled_at = Instant::now();
        assert!(
            pace.defer(WriteLoad::default()),
            "saturated, and a round just ran"
        );
        pace.last_round = Instant::now() - MAX_DEFER;
        assert!(!pace.defer(WriteLoad::default()));
        assert!(pace.defer(WriteLoad::default()), "counted from that round");
    }
}
