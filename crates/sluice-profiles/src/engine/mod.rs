//! The profile engine: one task per node; the node holding the lease reads
//! committed events through the durable cursor, sweeps due windows and
//! advances jobs, each step committed in one transaction (see
//! [`sluice_store::ProfileStore`]).
//!
//! - `compute`: the engine's low-priority thread for its CPU work.
//! - `defs`: live definitions in evaluation order.
//! - `events`: the per-batch step.
//! - `feed`: reading calls from the Kafka shape's event log instead.
//! - `work`: a batch's profiles: identity resolution, calls applied.
//! - `load`: reading a step's profiles.
//! - `diff`: values → changes → identify messages.
//! - `pace`: stepping aside during ingest bursts and delivery backlogs.
//! - `sweep`: window changes: due ones, and those prepared ahead.
//! - `handle`: waking the engine, and its counters.
//! - `jobs`: whole-population jobs (recompute, backfill).

mod compute;
mod defs;
mod diff;
mod events;
pub mod feed;
mod handle;
mod jobs;
mod load;
pub mod pace;
mod sweep;
mod work;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use sluice_store::{Partition, ProfileCommit, Store};
use tokio::task::JoinHandle;

pub use defs::Defs;
use events::{Advance, Batch};
pub use feed::{EventFeed, FeedRead};
pub use handle::EngineHandle;
use handle::Stats;

use crate::error::ProfileError;

/// Tuning of the engine (`[personas]` in the server's configuration).
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// This node's lease owner name; unique per process.
    pub node_id: String,
    /// How often an idle engine looks for events, due windows and jobs;
    /// also the granularity of window expiry. Under a steady trickle of
    /// events, steps start at most every half of this (see [`start`]).
    pub poll_interval: Duration,
    /// How long a lease lasts without renewal; a dead node's work moves to
    /// another node after this. The holder renews it once a third of it
    /// has passed.
    pub lease_ttl: Duration,
    /// Events read per step. 250: a step's working set is about 20 KB per
    /// event; steps of 2,000 raised a node's peak RSS by some 40 MB while it
    /// caught up on a backlog, for no faster catch-up, and steps of 500
    /// about 4 MB over 250 during an ingest burst, for a catch-up about 7 %
    /// faster (BENCHMARKS.md, "Measured choices").
    pub batch: u32,
    /// Step aside while ingest (or, without definitions, delivery)
    /// saturates the store's writer (see `pace`).
    pub defer_to_ingest: bool,
    /// How far ahead window changes are prepared (see `sweep`); zero
    /// evaluates each change only once it is due.
    pub schedule_ahead: Duration,
    /// `context.personas.space_id` (and `namespace`) of every message.
    pub space_id: String,
}

/// The space id messages carry unless configured: Sluice has one space.
pub const DEFAULT_SPACE_ID: &str = "spa_sluice";

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            node_id: format!("node-{}", uuid::Uuid::new_v4().simple()),
            poll_interval: Duration::from_millis(200),
            lease_ttl: Duration::from_secs(15),
            batch: 250,
            defer_to_ingest: true,
            schedule_ahead: Duration::from_secs(60),
            space_id: DEFAULT_SPACE_ID.to_owned(),
        }
    }
}

/// What one round did, which decides when the next one starts (ordered:
/// the most urgent part of a round wins).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Round {
    /// Nothing to do (or not the lease holder): wait for a wake-up or the
    /// poll interval.
    Idle,
    /// Some work, less than a full batch: more may be trickling in, so the
    /// next round waits a little to take it in one step.
    Some,
    /// A full batch (or page): a backlog; go on at once.
    Full,
}

/// The partitions this node holds, as it last saw them. While it holds
/// them this node is the only one to move their cursors, so it keeps the
/// cursors in memory instead of reading (and renewing) the lease rows on
/// every round; every commit still checks the leases in the database.
struct Held {
    partitions: Vec<Partition>,
    renewed: Instant,
}

/// What a commit of this node names: its owner id and the partitions it
/// holds (see [`sluice_store::ProfileCommit::partitions`]).
pub(crate) struct Lease {
    pub(crate) owner: String,
    pub(crate) partitions: Vec<u16>,
    /// Whether they are every partition of the store.
    all: bool,
}

impl Lease {
    /// An empty commit under this lease.
    pub(crate) fn commit(&self, now: DateTime<Utc>) -> ProfileCommit {
        ProfileCommit {
            owner: self.owner.clone(),
            now,
            partitions: self.partitions.clone(),
            ..ProfileCommit::default()
        }
    }

    /// Partition 0 settles scheduled changes and runs whole-population
    /// jobs for everyone.
    pub(crate) fn first(&self) -> bool {
        self.partitions.contains(&0)
    }

    /// The partitions whose due profiles this node sweeps: none named
    /// means all, the cheaper query.
    pub(crate) fn share(&self) -> Vec<u16> {
        if self.all {
            Vec::new()
        } else {
            self.partitions.clone()
        }
    }
}

/// Starts the engine. `on_emit` runs after a step put messages in the outbox
/// (the server wakes delivery). The task ends, releasing the lease, when
/// `stop` completes.
///
/// Pacing: a wake-up (an ingest commit) starts a round at once when the
/// engine was idle; after a round that found less than a full batch, the
/// next starts no sooner than half the poll interval later, so a steady
/// stream of small ingest commits is taken in few, larger steps instead of
/// one step (and one more writer transaction next to ingest's) per commit.
pub fn start(
    store: Arc<dyn Store>,
    config: EngineConfig,
    on_emit: Arc<dyn Fn() + Send + Sync>,
    stop: impl Future<Output = ()> + Send + 'static,
) -> (EngineHandle, JoinHandle<()>) {
    start_with(store, None, config, on_emit, stop)
}

/// [`start`], reading calls from `feed` instead of the store's events when
/// one is given (the Kafka shape).
pub fn start_with(
    store: Arc<dyn Store>,
    feed: Option<Arc<dyn EventFeed>>,
    config: EngineConfig,
    on_emit: Arc<dyn Fn() + Send + Sync>,
    stop: impl Future<Output = ()> + Send + 'static,
) -> (EngineHandle, JoinHandle<()>) {
    let handle = EngineHandle::default();
    let wake = handle.wake();
    let stats = handle.stats();
    let task = tokio::spawn(async move {
        tokio::pin!(stop);
        let cpu = match compute::Compute::start() {
            Ok(cpu) => cpu,
            Err(e) => {
                tracing::error!(error = %e, "profile engine not started");
                return;
            }
        };
        let defs = Defs::empty(config.space_id.clone());
        let pace = pace::Pace::new(store.write_load());
        let mut engine = Engine {
            store,
            feed,
            config,
            on_emit,
            held: None,
            defs: Arc::new(defs),
            cpu,
            pace,
            stats,
        };
        let coalesce = engine.config.poll_interval / 2;
        loop {
            let round = match engine.round().await {
                Ok(round) => round,
                Err(e) => {
                    sluice_store::warn_every!(
                        sluice_store::log_gate::BACKGROUND_EVERY,
                        e,
                        "profile engine step failed; retrying"
                    );
                    // The outcome of a failed commit is unknown: read the
                    // cursor again before the next step.
                    engine.forget();
                    Round::Idle
                }
            };
            let pause = match round {
                Round::Full => {
                    tokio::select! {
                        () = &mut stop => break,
                        () = tokio::task::yield_now() => {}
                    }
                    continue;
                }
                Round::Some => coalesce,
                Round::Idle => {
                    tokio::select! {
                        () = &mut stop => break,
                        () = wake.notified() => {}
                        () = tokio::time::sleep(engine.config.poll_interval) => {}
                    }
                    continue;
                }
            };
            tokio::select! {
                () = &mut stop => break,
                () = tokio::time::sleep(pause) => {}
            }
        }
        if let Err(e) = engine
            .store
            .release_profile_lease(&engine.config.node_id)
            .await
        {
            tracing::warn!(error = %e, "releasing the profile lease");
        }
    });
    (handle, task)
}

struct Engine {
    store: Arc<dyn Store>,
    feed: Option<Arc<dyn EventFeed>>,
    config: EngineConfig,
    on_emit: Arc<dyn Fn() + Send + Sync>,
    held: Option<Held>,
    defs: Arc<Defs>,
    cpu: compute::Compute,
    pace: pace::Pace,
    stats: Arc<Stats>,
}

impl Engine {
    /// Forgets the partitions held and where the feed stands: both are
    /// read again from the store.
    fn forget(&mut self) {
        self.held = None;
        if let Some(feed) = &self.feed {
            feed.reset();
        }
    }

    /// Calls after the held partitions' positions, and what their step
    /// moves: the store's cursor, or the feed's log positions.
    async fn read(
        &self,
        partitions: Vec<Partition>,
        lease: &Lease,
        limit: u32,
    ) -> Result<(Vec<sluice_store::CursorEvent>, Option<Advance>), ProfileError> {
        let store = self.store.as_ref();
        let Some(feed) = &self.feed else {
            let batch = store.profile_events_in(partitions, limit).await?;
            let last = batch.last().map(|e| Advance::Cursor(e.cursor));
            return Ok((batch, last));
        };
        // The log is read only while something is computed from it: a
        // shape that keeps every call out of the database keeps profiles
        // out too until a definition needs them, then builds them from
        // the oldest call the log retains (docs/kafka.md).
        if self.defs.items.is_empty() {
            return Ok((Vec::new(), None));
        }
        let read = feed
            .read(&lease.partitions, store.profile_partitions(), limit)
            .await?;
        let advance = (!read.advance.next.is_empty()).then_some(Advance::Log(read.advance));
        Ok((read.events, advance))
    }

    /// The partitions this node holds, with their committed cursors,
    /// taking its share and renewing the leases once a third of their TTL
    /// has passed since the last renewal.
    async fn lease(&mut self, now: DateTime<Utc>) -> Result<Option<Vec<Partition>>, ProfileError> {
        if let Some(h) = &self.held
            && h.renewed.elapsed() < self.config.lease_ttl / 3
        {
            return Ok(Some(h.partitions.clone()));
        }
        // Counted from before the call: the lease lasts at least that long.
        let asked = Instant::now();
        if let Some(feed) = &self.feed {
            feed.reset();
        }
        let partitions = self
            .store
            .take_profile_partitions(&self.config.node_id, now, self.config.lease_ttl)
            .await?;
        self.stats
            .partitions
            .store(partitions.len() as u64, Ordering::Relaxed);
        self.held = (!partitions.is_empty()).then_some(Held {
            partitions,
            renewed: asked,
        });
        Ok(self.held.as_ref().map(|h| h.partitions.clone()))
    }

    /// One round: the lease, then events, due windows, one job page.
    async fn round(&mut self) -> Result<Round, ProfileError> {
        let now = sluice_now();
        let Some(partitions) = self.lease(now).await? else {
            return Ok(Round::Idle);
        };
        if let Some(fresh) = Defs::refreshed(&self.defs, self.store.as_ref(), &self.cpu).await? {
            self.defs = Arc::new(fresh);
        }
        let definitions = !self.defs.items.is_empty();
        if self.config.defer_to_ingest && self.pace.defer(self.store.write_load(), definitions) {
            return Ok(Round::Some);
        }
        let started = Instant::now();
        let round = self.work(partitions, now).await;
        self.pace.ran(started.elapsed());
        // A job may have read the definitions afresh too.
        let n = u64::try_from(self.defs.items.len()).unwrap_or(u64::MAX);
        self.stats.definitions.store(n, Ordering::Relaxed);
        round
    }

    /// The work of a round: events, scheduled changes now due, due
    /// windows, one job page, then changes to prepare ahead.
    async fn work(
        &mut self,
        partitions: Vec<Partition>,
        now: DateTime<Utc>,
    ) -> Result<Round, ProfileError> {
        let store = self.store.as_ref();
        let lease = Lease {
            owner: self.config.node_id.clone(),
            partitions: partitions.iter().map(|p| p.id).collect(),
            all: partitions.len() >= usize::from(store.profile_partitions()),
        };
        let lease = &lease;
        let limit = if self.config.defer_to_ingest {
            self.pace
                .step(!self.defs.items.is_empty(), self.config.batch)
        } else {
            self.config.batch
        };
        let (batch, advance) = self.read(partitions, lease, limit).await?;
        let mut round = match batch.len() {
            0 => Round::Idle,
            n if n >= limit as usize => Round::Full,
            _ => Round::Some,
        };
        let mut lost = false;
        if let Some(advance) = advance {
            let stats = self.stats.as_ref();
            let next = match &advance {
                Advance::Cursor(next) => Some(*next),
                Advance::Log(_) => None,
            };
            let batch = Batch {
                events: batch,
                advance,
            };
            let step = events::step(store, &self.cpu, lease, &self.defs, batch, now, stats);
            if !step.await? {
                lost = true;
            } else if let (Some(next), Some(h)) = (next, &mut self.held) {
                for p in &mut h.partitions {
                    p.cursor = p.cursor.max(next);
                }
            }
        }
        // Scheduled changes exist only while definitions do (deleting one
        // drops its changes), so a node without any skips the look.
        if !lost && !self.defs.items.is_empty() {
            match sweep::settle(store, lease, now).await? {
                Step::Lost => lost = true,
                step => round = round.max(step.round()),
            }
        }
        if !lost {
            match sweep::sweep(store, lease, &self.defs, now, &self.stats).await? {
                Step::Lost => lost = true,
                step => round = round.max(step.round()),
            }
        }
        if !lost {
            match jobs::jobs(store, lease, &self.defs, now, &self.stats).await? {
                Step::Lost => lost = true,
                step => round = round.max(step.round()),
            }
        }
        // Preparing ahead only fills rounds with room to spare: a backlog
        // of events or a job page is more urgent, and a change not
        // prepared in time is still made when it falls due.
        if !lost && round != Round::Full && !self.config.schedule_ahead.is_zero() {
            let until = now + self.config.schedule_ahead;
            match sweep::ahead(store, lease, &self.defs, now, until, &self.stats).await? {
                Step::Lost => lost = true,
                step => round = round.max(step.round()),
            }
        }
        if lost {
            self.forget();
            return Ok(Round::Idle);
        }
        if round != Round::Idle {
            (self.on_emit)();
        }
        Ok(round)
    }
}

/// What a sweep or job commit did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    Nothing,
    Partial,
    Full,
    /// The commit was refused: this node no longer holds the lease.
    Lost,
}

impl Step {
    fn round(self) -> Round {
        match self {
            Step::Nothing | Step::Lost => Round::Idle,
            Step::Partial => Round::Some,
            Step::Full => Round::Full,
        }
    }
}

/// Whole milliseconds, as the store keeps times.
fn sluice_now() -> chrono::DateTime<chrono::Utc> {
    let t = chrono::Utc::now();
    chrono::DateTime::from_timestamp_millis(t.timestamp_millis()).unwrap_or(t)
}
