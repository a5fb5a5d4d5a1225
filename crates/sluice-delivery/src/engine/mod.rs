//! The delivery engine: a dispatcher task that claims due deliveries (or
//! takes them from this node's ingest, where the store leases them at the
//! commit: `sluice_store::local`) and spawns their sends, and a reporter
//! task that writes the results in groups.
//!
//! - `dispatcher`: the claim/spawn/sleep loop, deliveries handed over by
//!   ingest, per-destination lanes, shutdown.
//! - `deliver`: one attempt of one delivery (payload, signature, send, decide).
//! - `cache`: destination settings, re-read at most every TTL.
//! - `counted`: outcomes and latencies counted into the health tally.
//! - `first`: first attempts of calls read from an event log (the Kafka
//!   shape), and their hand-off to the store's retry state.
//! - `failure_log`: failed attempts and dead deliveries in the process log,
//!   rate-limited per destination.
//! - `observe`: outcomes handed to alerting ([`crate::alerts`]).
//! - `reporter`: grouped `Store::report` calls.
//! - `sizing`: how much to claim while a destination's queue is full.
//!
//! All delivery state lives in the store: a restarted engine picks up the
//! retries where the last one left them, and a crashed one's leased
//! deliveries come back when their leases end.

mod cache;
mod counted;
mod deliver;
mod dispatcher;
mod failure_log;
mod first;
mod health;
mod lane;
mod observe;
mod reporter;
mod sizing;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use sluice_store::Store;
use sluice_store::health::Tally;
use tokio::sync::{Notify, mpsc, watch};
use tokio::task::JoinHandle;

use crate::alerts::AlertSink;
use crate::config::DeliveryConfig;
use crate::error::DeliveryError;
use crate::sender::Sender;
use dispatcher::{Dispatcher, FromIngest};
pub use first::{FirstAttempts, Sent};
use sluice_store::local::LocalDelivery;

/// Signals shared between the engine handle, the tasks and the loop.
struct Signals {
    /// New work may be due (ingest commit, retry written, settings changed).
    pub wake: Arc<Notify>,
    /// Destination settings changed: drop the cache.
    pub invalidate: Arc<AtomicBool>,
    /// Becomes true on shutdown.
    pub stop: watch::Receiver<bool>,
    /// Claimed deliveries handed back unsent because their destination (or
    /// the engine) had no room: counted for `/metrics`.
    pub handed_back: Arc<AtomicU64>,
    /// Deliveries taken straight from this node's ingest, without a claim.
    pub from_ingest: Arc<AtomicU64>,
    /// Live nodes sharing `concurrency_per_destination` (see `lane.rs`).
    pub nodes: Arc<AtomicUsize>,
    /// Where outcomes go for alerting, when alerts are on.
    pub alerts: Option<AlertSink>,
    /// Where outcomes are counted for delivery health, when it is on.
    pub tally: Option<Arc<Tally>>,
}

/// Who else learns of the engine's outcomes.
#[derive(Default)]
pub struct Hooks {
    /// Alerting: every attempt's outcome and every dead delivery.
    pub alerts: Option<AlertSink>,
    /// Delivery health: every outcome and attempt latency, counted.
    pub tally: Option<Arc<Tally>>,
}

/// Starts and owns the delivery tasks.
pub struct DeliveryEngine;

/// A cheap, cloneable handle for the rest of the service to poke the engine.
#[derive(Clone, Debug)]
pub struct EngineHandle {
    wake: Arc<Notify>,
    invalidate: Arc<AtomicBool>,
    handed_back: Arc<AtomicU64>,
    from_ingest: Arc<AtomicU64>,
    nodes: Arc<AtomicUsize>,
}

impl EngineHandle {
    /// Tells the engine new deliveries were committed, so their first attempt
    /// starts now instead of at the next poll. Call after each ingest commit.
    pub fn notify(&self) {
        self.wake.notify_one();
    }

    /// Tells the engine destination settings changed (created, edited,
    /// disabled, deleted), so the next delivery re-reads them.
    pub fn invalidate_destinations(&self) {
        self.invalidate.store(true, Ordering::SeqCst);
        self.wake.notify_one();
    }

    /// Claimed deliveries handed back unsent so far, because their
    /// destination already held as many as it may (or the engine did).
    /// Each costs a store write and delays that delivery by 100 ms; a
    /// steadily rising count means a destination slower than its traffic.
    pub fn handed_back(&self) -> u64 {
        self.handed_back.load(Ordering::Relaxed)
    }

    /// Deliveries so far that this node's ingest leased to the engine as it
    /// committed them, and handed over without a claim (see
    /// `sluice_store::local`).
    pub fn from_ingest(&self) -> u64 {
        self.from_ingest.load(Ordering::Relaxed)
    }

    /// Tells the engine how many nodes deliver from the same store:
    /// `concurrency_per_destination` is the deployment's limit, and each
    /// node sends at most its equal share of it.
    pub fn set_nodes(&self, nodes: usize) {
        self.nodes.store(nodes.max(1), Ordering::Relaxed);
    }

    /// The node count last set (1 until then).
    pub fn nodes(&self) -> usize {
        self.nodes.load(Ordering::Relaxed)
    }
}

impl DeliveryEngine {
    /// Validates `config`, builds the HTTP client and spawns the engine on the
    /// current tokio runtime. When `shutdown` completes the engine stops
    /// claiming, waits up to `shutdown_grace` for sends in flight, writes
    /// their reports, and the returned task ends.
    pub fn start(
        store: Arc<dyn Store>,
        config: DeliveryConfig,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(EngineHandle, JoinHandle<()>), DeliveryError> {
        Self::start_with_alerts(store, config, None, shutdown)
    }

    /// [`Self::start`], handing every attempt's outcome and every dead
    /// delivery to `alerts` (without waiting: see [`crate::alerts`]).
    pub fn start_with_alerts(
        store: Arc<dyn Store>,
        config: DeliveryConfig,
        alerts: Option<AlertSink>,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(EngineHandle, JoinHandle<()>), DeliveryError> {
        let hooks = Hooks {
            alerts,
            tally: None,
        };
        Self::start_with(store, config, hooks, shutdown)
    }

    /// [`Self::start`], telling `hooks` of outcomes as they are decided.
    pub fn start_with(
        store: Arc<dyn Store>,
        config: DeliveryConfig,
        hooks: Hooks,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(EngineHandle, JoinHandle<()>), DeliveryError> {
        config.validate()?;
        let sender = Sender::new(&config)?;
        let handle = EngineHandle {
            wake: Arc::new(Notify::new()),
            invalidate: Arc::new(AtomicBool::new(false)),
            handed_back: Arc::new(AtomicU64::new(0)),
            from_ingest: Arc::new(AtomicU64::new(0)),
            nodes: Arc::new(AtomicUsize::new(1)),
        };
        let (stop_tx, stop_rx) = watch::channel(false);
        tokio::spawn(async move {
            shutdown.await;
            let _ = stop_tx.send(true);
        });
        let (report_tx, report_rx) = mpsc::unbounded_channel();
        let reporter = tokio::spawn(reporter::run(
            store.clone(),
            report_rx,
            handle.wake.clone(),
            config.lease,
        ));
        let signals = Signals {
            wake: handle.wake.clone(),
            invalidate: handle.invalidate.clone(),
            stop: stop_rx,
            handed_back: handle.handed_back.clone(),
            from_ingest: handle.from_ingest.clone(),
            nodes: handle.nodes.clone(),
            alerts: hooks.alerts,
            tally: hooks.tally,
        };
        // Half the engine's room takes deliveries straight from this node's
        // ingest; the rest is always there for claims (retries, backlogs).
        let (local, handed) = LocalDelivery::new(config.max_in_flight.div_ceil(2), config.lease);
        // Shut until the first claim has looked at what is due: after a
        // restart, a backlog goes out before calls accepted since.
        local.open(false);
        let from_ingest = store
            .deliver_locally(local.clone())
            .then_some(FromIngest { local, handed });
        let dispatcher = Dispatcher::new(store, config, sender, signals, report_tx, from_ingest);
        let task = tokio::spawn(async move {
            dispatcher.run().await;
            if let Err(e) = reporter.await {
                tracing::error!(error = %e, "delivery report writer failed");
            }
        });
        Ok((handle, task))
    }
}
