//! The dispatcher loop: claim due deliveries, hand each to its own task,
//! sleep until something is due. It never awaits an HTTP call itself.
//!
//! - `from_ingest`: deliveries this node's ingest leased to the engine, and
//!   the door through which it may.
//! - `waits`: the loop's waits, each of which also takes those deliveries.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use chrono::Utc;
use sluice_store::local::{Handed, LocalDelivery, Unit};

pub(super) use from_ingest::FromIngest;
use sluice_store::{AttemptReport, DueDelivery, Outcome, Store};
use tokio::sync::{Notify, Semaphore, mpsc, watch};
use tokio::task::JoinSet;

mod from_ingest;
mod waits;

use super::Signals;
use super::cache::{DestinationCache, Lookup};
use super::counted;
use super::deliver;
use super::lane::{self, Lane};
use super::observe;
use super::sizing::{self, ClaimSize, LaneRoom};
use crate::config::DeliveryConfig;
use crate::policy::RetryPolicy;
use crate::sender::Sender;

/// Shortest idle sleep, so a due time already in the past cannot spin.
const MIN_IDLE: Duration = Duration::from_millis(5);
/// How long a delivery handed back by a saturated destination waits before
/// it can be claimed again.
const RELEASE_DELAY: Duration = Duration::from_millis(100);

pub(super) struct Dispatcher {
    store: Arc<dyn Store>,
    config: DeliveryConfig,
    policy: RetryPolicy,
    /// One `Arc` to clone per delivery, not the sender's parts.
    sender: Arc<Sender>,
    cache: DestinationCache,
    lanes: HashMap<String, Arc<Lane>>,
    /// Lanes that handed back for want of room since they last emptied.
    saturated: HashSet<String>,
    /// The destinations the last claim's rows went to.
    focus: Vec<String>,
    /// Since when the loop has waited for a saturated lane to make room.
    waiting_since: Option<Instant>,
    /// Bounds deliveries held by this engine (`max_in_flight`).
    global: Arc<Semaphore>,
    /// Poked when a task ends, so a loop waiting for room resumes.
    freed: Arc<Notify>,
    signals: Signals,
    reports: mpsc::UnboundedSender<AttemptReport>,
    tasks: JoinSet<()>,
    /// Deliveries this node's ingest leased to it, when the store does
    /// that ([`sluice_store::local`]); `None` once the sender is gone.
    handed: Option<mpsc::UnboundedReceiver<Vec<Handed>>>,
    /// The door those come through: shut while a backlog is claimed.
    local: Option<Arc<LocalDelivery>>,
    /// The destinations that door is shut to, as last told to ingest.
    busy: HashSet<String>,
}

impl Dispatcher {
    pub(super) fn new(
        store: Arc<dyn Store>,
        config: DeliveryConfig,
        sender: Sender,
        signals: Signals,
        reports: mpsc::UnboundedSender<AttemptReport>,
        from_ingest: Option<FromIngest>,
    ) -> Self {
        let (local, handed) = from_ingest.map(|f| (f.local, f.handed)).unzip();
        Self {
            handed,
            local,
            policy: config.retry_policy(),
            cache: DestinationCache::new(config.destination_cache_ttl),
            global: Arc::new(Semaphore::new(config.max_in_flight)),
            store,
            config,
            sender: Arc::new(sender),
            lanes: HashMap::new(),
            saturated: HashSet::new(),
            busy: HashSet::new(),
            focus: Vec::new(),
            waiting_since: None,
            freed: Arc::new(Notify::new()),
            signals,
            reports,
            tasks: JoinSet::new(),
        }
    }

    /// Runs until shutdown, then drains in-flight sends (bounded by the grace).
    pub(super) async fn run(mut self) {
        let mut stop = self.signals.stop.clone();
        while !stopping(&stop) {
            while self.tasks.try_join_next().is_some() {}
            if self.signals.invalidate.swap(false, Ordering::SeqCst) {
                self.cache.invalidate();
            }
            self.take_handed().await;
            let room = self
                .global
                .available_permits()
                .min(self.config.claim_batch as usize);
            if room == 0 {
                self.open_door(false);
                self.wait_for_room(&mut stop, None).await;
                continue;
            }
            let room = match self.size_claim() {
                ClaimSize::Normal => room,
                ClaimSize::UpTo(free) => room.min(free),
                ClaimSize::Wait => {
                    let since = *self.waiting_since.get_or_insert_with(Instant::now);
                    let until = tokio::time::Instant::from_std(since + RELEASE_DELAY);
                    self.wait_for_room(&mut stop, Some(until)).await;
                    continue;
                }
            };
            self.waiting_since = None;
            let limit = u32::try_from(room).unwrap_or(u32::MAX);
            // Before the claim: its leases run from no earlier than this.
            let claimed_at = Instant::now();
            let claimed = match self
                .store
                .claim_due(Utc::now(), limit, self.config.lease)
                .await
            {
                Ok(claimed) => claimed,
                Err(e) => {
                    sluice_store::warn_every!(
                        sluice_store::log_gate::BACKGROUND_EVERY,
                        e,
                        "claiming deliveries failed"
                    );
                    self.idle(&mut stop, self.config.poll_interval).await;
                    continue;
                }
            };
            let full = claimed.len() == room;
            self.focus.clear();
            for due in &claimed {
                if !self.focus.contains(&due.destination_id) {
                    self.focus.push(due.destination_id.clone());
                }
            }
            let mut taken = 0;
            for due in claimed {
                taken += usize::from(self.dispatch(due, None, claimed_at).await);
            }
            // An idle lane is kept while its breaker is open, so the next
            // claim still sees it.
            self.lanes
                .retain(|_, lane| lane.held.load(Ordering::SeqCst) > 0 || lane.health.open());
            let lanes = &self.lanes;
            self.saturated.retain(|id| lanes.contains_key(id));
            // A backlog goes out oldest first, through claims; and calls for
            // a destination sending all it may would only queue here or be
            // handed back, so ingest leaves those to claims too.
            self.publish_busy();
            self.open_door(!full);
            if full && taken == 0 {
                // Everything due belongs to saturated destinations and was
                // handed back: wait for a send to finish rather than spin.
                let until = tokio::time::Instant::now() + RELEASE_DELAY;
                self.wait_for_room(&mut stop, Some(until)).await;
            } else if !full {
                let wait = self.idle_wait().await;
                self.idle(&mut stop, wait).await;
            }
        }
        self.drain().await;
    }

    /// Routes one delivery, claimed or handed over from ingest with its
    /// `unit` of room: discard it, hand it back, or spawn its send. Returns
    /// false when it was handed back (its destination is full). The unit
    /// returns when the send ends, or at once when there is none. Its lease
    /// began no earlier than `since`.
    async fn dispatch(&mut self, due: DueDelivery, unit: Option<Unit>, since: Instant) -> bool {
        let dest = match self
            .cache
            .get(self.store.as_ref(), &due.destination_id)
            .await
        {
            Lookup::Found(dest) => dest,
            Lookup::Missing => {
                self.finish(&due, deliver::discard(&due, "destination deleted"));
                return true;
            }
            // Left leased: it is claimed again when the lease ends.
            Lookup::Unavailable => return true,
        };
        if !dest.enabled {
            self.finish(&due, deliver::discard(&due, "destination disabled"));
            return true;
        }
        let per_dest = self.per_dest();
        // Looked up before inserting: the entry API would copy the id for
        // every delivery.
        let lane = match self.lanes.get(&due.destination_id) {
            Some(lane) => {
                lane.resize(per_dest);
                Arc::clone(lane)
            }
            None => {
                let lane = Arc::new(Lane::new(per_dest));
                self.lanes
                    .insert(due.destination_id.clone(), Arc::clone(&lane));
                lane
            }
        };
        let window = self.config.retry_window;
        if lane.health.open() {
            let wait = lane
                .health
                .hand_back_delay(self.config.backoff_base, self.config.backoff_cap);
            let alerts = self.signals.alerts.as_ref();
            let report = observe::hold_back(alerts, &dest, &due, wait, window, &lane.log);
            let finished = !matches!(report.outcome, Outcome::Retry { .. });
            if finished || lane.held.load(Ordering::SeqCst) >= 1 {
                self.finish(&due, report);
                return finished;
            }
        }
        if lane.held.load(Ordering::SeqCst) >= per_dest + self.config.max_queued_per_destination {
            tracing::debug!(destination = %due.destination_id, "destination saturated; delivery handed back");
            self.saturated.insert(due.destination_id.clone());
            self.close_for(&due.destination_id);
            self.hand_back(due.delivery_id);
            return false;
        }
        // A delivery that would wait for its lane (already sending at full
        // concurrency) leaves one lane's concurrency of the global room
        // free: queues of destinations that hang must not fill
        // `max_in_flight` and hold up every other destination until their
        // breakers open; a destination with a free slot can always send.
        let reserve = per_dest.min(self.config.max_in_flight / 2);
        if lane.held.load(Ordering::SeqCst) >= per_dest
            && self.global.available_permits() <= reserve
        {
            self.saturated.insert(due.destination_id.clone());
            self.close_for(&due.destination_id);
            self.open_door(false);
            self.hand_back(due.delivery_id);
            return false;
        }
        let Ok(global) = self.global.clone().try_acquire_owned() else {
            self.open_door(false);
            self.hand_back(due.delivery_id);
            return false;
        };
        if lane.held.fetch_add(1, Ordering::SeqCst) + 1 >= per_dest {
            // Its next delivery would queue: new calls for it wait in the
            // store, so that a backlog builds where claims take it in order.
            self.close_for(&due.destination_id);
        }
        // Measured from the lease's start, not from now: a delivery handed
        // over from ingest may have waited in the channel.
        let claimed_at = since;
        let max_wait = self.config.lease.saturating_sub(self.config.timeout * 2);
        let sender = Arc::clone(&self.sender);
        let policy = self.policy;
        let reports = self.reports.clone();
        let freed = self.freed.clone();
        let mut stop = self.signals.stop.clone();
        let (base, cap) = (self.config.backoff_base, self.config.backoff_cap);
        let alerts = self.signals.alerts.clone();
        let tally = self.signals.tally.clone();
        self.tasks.spawn(async move {
            let _global = global;
            let _unit = unit;
            // A free slot is taken at once; only a full lane waits (and
            // then gives up its wait on shutdown).
            let slot = match lane.slots.try_acquire() {
                Ok(slot) => Some(slot),
                Err(_) => tokio::select! {
                    slot = lane.slots.acquire() => slot.ok(),
                    _ = stop.wait_for(|s| *s) => None,
                },
            };
            let id = due.delivery_id;
            // Queued before the breaker opened: only one send goes out as the
            // probe, the rest wait like newly claimed deliveries.
            let in_flight = lane.in_flight();
            if slot.is_some() && lane.health.open() && in_flight > 1 {
                let wait = lane.health.hand_back_delay(base, cap);
                let report =
                    observe::hold_back(alerts.as_ref(), &dest, &due, wait, window, &lane.log);
                counted::outcome(tally.as_deref(), &dest.id, &report);
                let _ = reports.send(report);
                lane.held.fetch_sub(1, Ordering::SeqCst);
                freed.notify_one();
                return;
            }
            // A send that would outlive the lease is handed back instead.
            match slot {
                Some(_slot) if claimed_at.elapsed() < max_wait => {
                    // Boxed: the send's future is a few KB, and only sends
                    // need it, not the deliveries queued for a slot.
                    let probe = lane.health.open();
                    let observed = alerts.as_ref().map(|_| due.message_id.clone());
                    let attempt = deliver::attempt(&sender, &policy, due, &dest, &lane.log);
                    let report = Box::pin(attempt).await;
                    lane.health.record(&report.outcome, probe);
                    observe::attempt(alerts.as_ref(), &dest, observed, &report);
                    counted::outcome(tally.as_deref(), &dest.id, &report);
                    let _ = reports.send(report);
                }
                // Nothing was sent, so any node may take it at once: held
                // too long in its lane, or waiting there as the engine stops.
                Some(_) | None => {
                    let _ = reports.send(deliver::release(id, Duration::ZERO));
                }
            }
            lane.held.fetch_sub(1, Ordering::SeqCst);
            freed.notify_one();
        });
        true
    }

    /// Counts `report` of `due` and hands it to the reporter.
    fn finish(&self, due: &DueDelivery, report: AttemptReport) {
        counted::outcome(self.signals.tally.as_deref(), &due.destination_id, &report);
        let _ = self.reports.send(report);
    }

    /// Hands a claimed delivery back unsent, due again after [`RELEASE_DELAY`].
    fn hand_back(&self, delivery_id: i64) {
        self.signals.handed_back.fetch_add(1, Ordering::Relaxed);
        let _ = self
            .reports
            .send(deliver::release(delivery_id, RELEASE_DELAY));
    }

    /// Sizes the next claim by the lanes the last one reached
    /// ([`sizing`]): while they are all saturated, claim only what they can
    /// take.
    fn size_claim(&self) -> ClaimSize {
        let cap = self.per_dest() + self.config.max_queued_per_destination;
        let focus: Vec<LaneRoom> = self
            .focus
            .iter()
            .map(|id| LaneRoom {
                free: self.lanes.get(id).map_or(cap, |lane| {
                    cap.saturating_sub(lane.held.load(Ordering::SeqCst))
                }),
                saturated: self.saturated.contains(id),
            })
            .collect();
        let want = sizing::want(self.config.claim_batch as usize, cap);
        let waited_out = self
            .waiting_since
            .is_some_and(|since| since.elapsed() >= RELEASE_DELAY);
        sizing::size_claim(&focus, want, waited_out)
    }

    /// This node's share of `concurrency_per_destination`.
    fn per_dest(&self) -> usize {
        let nodes = self.signals.nodes.load(Ordering::Relaxed);
        lane::share(self.config.concurrency_per_destination, nodes)
    }

    /// Waits up to the grace period for in-flight sends, then abandons the
    /// rest (their leases bring them back). Dropping `self` closes the report
    /// channel, which lets the reporter flush and end.
    async fn drain(mut self) {
        // Ingest leases nothing more to this engine; what it handed over and
        // was not dispatched is released for any node to claim at once.
        if let Some(mut rx) = self.handed.take() {
            rx.close();
            while let Ok(batch) = rx.try_recv() {
                for handed in batch {
                    let _ = (self.reports)
                        .send(deliver::release(handed.due.delivery_id, Duration::ZERO));
                }
            }
        }
        let grace = self.config.shutdown_grace;
        let finished = tokio::time::timeout(grace, async {
            while self.tasks.join_next().await.is_some() {}
        })
        .await;
        if finished.is_err() {
            tracing::warn!(
                abandoned = self.tasks.len(),
                "shutdown grace elapsed; abandoning sends"
            );
            self.tasks.abort_all();
            while self.tasks.join_next().await.is_some() {}
        }
    }
}

/// True once shutdown was requested, or when its signal can no longer come.
fn stopping(stop: &watch::Receiver<bool>) -> bool {
    *stop.borrow() || stop.has_changed().is_err()
}
