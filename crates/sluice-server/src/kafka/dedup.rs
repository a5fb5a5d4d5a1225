//! Deduplication of client retries in the delivery consumer: the memory
//! of calls read (`sluice_log::recent`), loaded from the keys saved by a
//! partition's earlier owners and saved below each commit
//! (`sluice_store::SeenStore`), so it survives `kill -9` and rebalances.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use sluice_log::kafka::ConsumedRecord;
use sluice_log::recent::{self, Recent, Slice, Unsaved};
use sluice_store::log_gate::LogGate;
use sluice_store::{SeenSlice, Store, StoreError};

use crate::log_metrics::LogCounters;

/// Deduplication as configured.
pub(super) struct DedupSettings {
    /// The window (`storage.dedup_window_secs`).
    pub window: Duration,
    /// The topic, which names the saved keys.
    pub topic: String,
    /// The topic's partitions, among which the memory is shared out.
    pub partitions: i32,
    /// The most calls remembered (`kafka.dedup_max_calls`).
    pub max_calls: usize,
    /// Where the keys below each commit are saved.
    pub store: Arc<dyn Store>,
    /// Where the memory's size is shown (`/metrics`).
    pub counters: Arc<LogCounters>,
}

/// The fewest saved keys loaded for a partition, however small the cap.
const MIN_BUDGET: usize = 1_000;
/// How often the saved keys past the window or the budget are deleted.
const TRIM_EVERY: Duration = Duration::from_secs(60);
/// How often a full memory is warned of.
const FORCED_WARN_EVERY: Duration = Duration::from_secs(3_600);
/// How long saving keys waits after a failed save.
const SAVE_PAUSE: Duration = Duration::from_secs(10);

/// The keys read and not yet saved, and where they are saved: shared by
/// the consumer's loop and its hand-over of partitions the group takes
/// away ([`Keys::save_now`]).
pub(super) struct Keys {
    unsaved: Mutex<Unsaved>,
    store: Arc<dyn Store>,
    topic: String,
}

impl Keys {
    fn unsaved(&self) -> MutexGuard<'_, Unsaved> {
        self.unsaved.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn slices(&self, positions: &[(i32, i64)]) -> Vec<SeenSlice> {
        self.unsaved()
            .below(positions)
            .into_iter()
            .map(|s: Slice| SeenSlice {
                partition: s.partition,
                upto: s.upto,
                newest_at: s.newest_at,
                keys: s.keys,
            })
            .collect()
    }

    /// Saves the keys below `positions`.
    async fn save(&self, positions: &[(i32, i64)]) -> Result<(), StoreError> {
        let slices = self.slices(positions);
        if slices.is_empty() {
            return Ok(());
        }
        self.store.save_seen(&self.topic, &slices).await
    }

    /// Saves the keys below `positions` (of partitions being taken away)
    /// before the consumer commits them and the new owner loads them. It
    /// runs inside the consumer's rebalance callback, which cannot wait for
    /// a future, so it blocks this worker thread for the write; where the
    /// runtime has no other thread to carry on with (a current-thread
    /// runtime), it saves nothing. An error means nothing was saved: the
    /// caller then leaves the offsets to the last commit.
    pub(super) fn save_now(&self, positions: &[(i32, i64)]) -> Result<(), String> {
        super::finish_here(self.save(positions))
            .ok_or("no multi-thread runtime to save from")?
            .map_err(|e| e.to_string())?;
        self.unsaved().saved(positions);
        Ok(())
    }
}

/// Drops a client's retry of a call read within the window, by this node or
/// by a partition's earlier owners (see `sluice_log::recent`).
pub(super) struct Dedup {
    recent: Recent,
    keys: Arc<Keys>,
    window_ms: i64,
    /// Keys kept per partition: the node's cap shared out evenly.
    budget: usize,
    trimmed_at: Option<Instant>,
    /// No saves until then: the last one failed.
    paused_until: Option<Instant>,
    counters: Arc<LogCounters>,
    /// What [`Recent::forced`] was when last shown.
    forced_shown: u64,
}

impl Dedup {
    pub(super) fn new(settings: DedupSettings) -> Self {
        let window_ms = i64::try_from(settings.window.as_millis()).unwrap_or(i64::MAX);
        let partitions = usize::try_from(settings.partitions).map_or(1, |p| p.max(1));
        Dedup {
            recent: Recent::new(window_ms, settings.max_calls),
            keys: Arc::new(Keys {
                unsaved: Mutex::default(),
                store: settings.store,
                topic: settings.topic,
            }),
            window_ms,
            budget: (settings.max_calls / partitions).max(MIN_BUDGET),
            trimmed_at: None,
            paused_until: None,
            counters: settings.counters,
            forced_shown: 0,
        }
    }

    fn horizon(&self) -> i64 {
        chrono::Utc::now()
            .timestamp_millis()
            .saturating_sub(self.window_ms)
    }

    /// Starts `partition`'s memory afresh, as it is assigned to this node,
    /// from the keys saved for it: what this node noted of it before may
    /// be of calls it read but gave up when the partition went, and those
    /// are read again and must be sent (`sluice_log::recent`). A store that
    /// cannot answer leaves the memory to this node's own reads: retries
    /// may then be sent twice, nothing is dropped.
    pub(super) async fn load(&mut self, partition: i32) {
        self.recent.forget(partition);
        self.keys.unsaved().forget(partition);
        let keys = &self.keys;
        match keys
            .store
            .load_seen(&keys.topic, partition, self.horizon(), self.budget)
            .await
        {
            Ok(slices) => {
                for slice in slices {
                    for key in slice.keys {
                        self.recent.remember(partition, key, slice.newest_at);
                    }
                }
            }
            Err(e) => sluice_store::warn_every!(
                sluice_store::log_gate::BACKGROUND_EVERY,
                e,
                "loading the keys saved for deduplication failed; retries may be sent twice"
            ),
        }
    }

    /// Whether `record` is the first of its (source, messageId) here.
    pub(super) fn first(&mut self, record: &ConsumedRecord) -> bool {
        let key = recent::key(&record.source_id, &record.message_id);
        let at = chrono::DateTime::parse_from_rfc3339(&record.received_at).map_or_else(
            |_| chrono::Utc::now().timestamp_millis(),
            |t| t.timestamp_millis(),
        );
        let first = self.recent.first(record.partition, key, at);
        if first {
            self.keys
                .unsaved()
                .note(record.partition, record.offset, at, key);
        }
        first
    }

    /// Shows the memory's size and reach on `/metrics`, and warns (at most
    /// once an hour) while the cap makes the window shorter than set.
    fn show(&mut self, now: i64) {
        let counters = &self.counters;
        let reach = self.recent.reaches_back_to().map_or(0, |at| {
            now.saturating_sub(at).clamp(0, self.window_ms) / 1_000
        });
        counters
            .dedup_calls
            .store(to_u64(self.recent.held()), Ordering::Relaxed);
        counters
            .dedup_bytes
            .store(to_u64(self.recent.bytes()), Ordering::Relaxed);
        counters
            .dedup_reach_secs
            .store(u64::try_from(reach).unwrap_or(0), Ordering::Relaxed);
        let forced = self.recent.forced();
        if forced > self.forced_shown {
            self.forced_shown = forced;
            static GATE: LogGate = LogGate::new(FORCED_WARN_EVERY);
            if GATE.allow().is_some() {
                tracing::warn!(
                    reach_secs = reach,
                    window_secs = self.window_ms / 1_000,
                    "the deduplication memory is full: retries of calls read before its reach \
                     are no longer dropped; raise kafka.dedup_max_calls or shorten \
                     storage.dedup_window_secs"
                );
            }
        }
    }

    /// The keys shared with the hand-over of partitions.
    pub(super) fn keys(&self) -> Arc<Keys> {
        self.keys.clone()
    }

    /// Saves the keys below `positions`, before they are committed. After
    /// a failure it does not try again for [`SAVE_PAUSE`], so that a
    /// database that is down does not hold up every commit for its
    /// timeout; the keys of that time are not saved.
    pub(super) async fn save(&mut self, positions: &[(i32, i64)]) -> Result<(), StoreError> {
        if self.paused_until.is_some_and(|t| Instant::now() < t) {
            return Ok(());
        }
        let saved = self.keys.save(positions).await;
        self.paused_until = saved.is_err().then(|| Instant::now() + SAVE_PAUSE);
        saved
    }

    /// `positions` are saved and committed.
    pub(super) fn committed(&self, positions: &[(i32, i64)]) {
        self.keys.unsaved().saved(positions);
    }

    /// Forgets what belongs to partitions no longer held and shows the
    /// memory's size; deletes saved keys past the window or the budget about
    /// once a minute. The memory itself ages with the calls read, by their
    /// acceptance time, never by the clock: a consumer behind on a backlog
    /// must still drop the retries in it.
    pub(super) async fn tidy(&mut self, assigned: &[i32]) {
        self.keys.unsaved().keep(assigned);
        self.show(chrono::Utc::now().timestamp_millis());
        if self.trimmed_at.is_some_and(|t| t.elapsed() < TRIM_EVERY) {
            return;
        }
        self.trimmed_at = Some(Instant::now());
        let keys = &self.keys;
        if let Err(e) = keys
            .store
            .trim_seen(&keys.topic, self.horizon(), self.budget)
            .await
        {
            sluice_store::warn_every!(
                sluice_store::log_gate::BACKGROUND_EVERY,
                e,
                "trimming the keys saved for deduplication failed"
            );
        }
    }
}

fn to_u64(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}
