//! First attempts of calls read from an event log rather than claimed from
//! the store: the Kafka shape's delivery path.
//!
//! In that shape ingest writes nothing to the database; a consumer reads
//! each accepted call from the log and hands it here. A call every
//! destination accepts on the first attempt leaves no row behind. Anything
//! else (a retry to schedule, a dead or discarded delivery) is handed to
//! the store's retry state ([`FirstAttempts::hand_off`]): the call is
//! stored there with deliveries to those destinations only, each carrying
//! its first attempt as if the store's own dispatcher had made it, in one
//! transaction. From there the store's delivery engine owns it
//! for the rest of the retry window.
//!
//! Sends share the dispatcher's building blocks: the destination cache
//! (re-read at most every `destination_cache_ttl`, so a destination
//! disabled or edited takes effect within it),
//! one lane per destination (its concurrency share, breaker and failure
//! log), the attempt itself, and the alert and health hooks.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use chrono::Utc;
use sluice_store::log_record::LogRecord;
use sluice_store::{
    AppendRequest, AttemptReport, Destination, DueDelivery, Outcome, Store, StoreError,
};

use super::cache::{DestinationCache, Lookup};
use super::lane::{self, Lane};
use super::{EngineHandle, Hooks, counted, deliver, observe};
use crate::config::DeliveryConfig;
use crate::error::DeliveryError;
use crate::policy::RetryPolicy;
use crate::sender::Sender;

/// What the first attempts of one call left unfinished.
#[derive(Debug, Default)]
pub struct Sent {
    /// Reports of the deliveries that did not succeed, by destination:
    /// they go to the store's retry state.
    pub unfinished: Vec<(String, AttemptReport)>,
    /// Some destination was not sent to because the call stopped being
    /// this node's while it waited for a free slot (its partition moved
    /// to another node, which sends it): nothing of it is finished here.
    pub given_up: bool,
}

/// Sends calls read from a log, each once to each of its destinations.
pub struct FirstAttempts {
    store: Arc<dyn Store>,
    sender: Sender,
    policy: RetryPolicy,
    config: DeliveryConfig,
    hooks: Hooks,
    cache: tokio::sync::Mutex<DestinationCache>,
    lanes: Mutex<HashMap<String, Arc<Lane>>>,
    /// Live nodes, as the store's engine counts them (its handle's).
    nodes: Arc<AtomicUsize>,
}

impl FirstAttempts {
    /// Validates `config` and builds the HTTP client. `engine` is the
    /// store's delivery engine on this node: its count of live nodes
    /// splits `concurrency_per_destination` here as it does there.
    pub fn new(
        store: Arc<dyn Store>,
        config: DeliveryConfig,
        hooks: Hooks,
        engine: &EngineHandle,
    ) -> Result<Self, DeliveryError> {
        config.validate()?;
        Ok(FirstAttempts {
            store,
            sender: Sender::new(&config)?,
            policy: config.retry_policy(),
            cache: tokio::sync::Mutex::new(DestinationCache::new(config.destination_cache_ttl)),
            lanes: Mutex::new(HashMap::new()),
            nodes: engine.nodes.clone(),
            config,
            hooks,
        })
    }

    /// Sends `record` to each of its destinations at once, each within its
    /// lane's concurrency. A destination deleted since the call was
    /// accepted is skipped; a disabled one gets a discarded delivery, as in
    /// the store's own dispatch. Fails, sending nothing, when destinations
    /// cannot be read (the store is down): the caller tries again later.
    ///
    /// `ours` is asked once a destination's slot is free, right before the
    /// request: false gives the call up (see [`Sent::given_up`]).
    pub async fn send(
        &self,
        record: &LogRecord,
        ours: &(dyn Fn() -> bool + Sync),
    ) -> Result<Sent, StoreError> {
        let mut destinations = Vec::with_capacity(record.destination_ids.len());
        {
            let mut cache = self.cache.lock().await;
            for id in &record.destination_ids {
                match cache.get(self.store.as_ref(), id).await {
                    Lookup::Found(dest) => destinations.push(dest),
                    Lookup::Missing => {}
                    Lookup::Unavailable => {
                        return Err(StoreError::backend(
                            sluice_store::ErrorKind::Unavailable,
                            "reading destinations",
                        ));
                    }
                }
            }
        }
        let sends = destinations
            .iter()
            .map(|dest| self.send_one(record, dest, ours));
        let mut sent = Sent::default();
        for sent_one in futures::future::join_all(sends).await {
            match sent_one {
                None => sent.given_up = true,
                Some((_, report)) if matches!(report.outcome, Outcome::Succeeded) => {}
                Some(unfinished) => sent.unfinished.push(unfinished),
            }
        }
        Ok(sent)
    }

    /// One destination's attempt; `None` when the call was given up.
    async fn send_one(
        &self,
        record: &LogRecord,
        dest: &Arc<Destination>,
        ours: &(dyn Fn() -> bool + Sync),
    ) -> Option<(String, AttemptReport)> {
        let due = DueDelivery::unattempted(
            0,
            0,
            dest.id.clone(),
            record.message_id.clone(),
            record.body_for(&dest.id).to_owned(),
            record.received_at,
        );
        if !dest.enabled {
            return Some((
                dest.id.clone(),
                deliver::discard(&due, "destination disabled"),
            ));
        }
        let lane = self.lane(&dest.id);
        let alerts = self.hooks.alerts.as_ref();
        let report = match lane.slots.acquire().await {
            Ok(_slot) if !ours() => return None,
            // While the destination's breaker is open only one send goes
            // out as the probe; the rest wait in retry state.
            Ok(_slot) if lane.health.open() && lane.in_flight() > 1 => {
                let wait = (lane.health)
                    .hand_back_delay(self.config.backoff_base, self.config.backoff_cap);
                observe::hold_back(
                    alerts,
                    dest,
                    &due,
                    wait,
                    self.config.retry_window,
                    &lane.log,
                )
            }
            Ok(_slot) => {
                let probe = lane.health.open();
                let attempt = deliver::attempt(&self.sender, &self.policy, due, dest, &lane.log);
                let report = Box::pin(attempt).await;
                lane.health.record(&report.outcome, probe);
                observe::attempt(alerts, dest, Some(record.message_id.clone()), &report);
                report
            }
            // The semaphore is never closed.
            Err(_) => deliver::release(0, std::time::Duration::ZERO),
        };
        counted::outcome(self.hooks.tally.as_deref(), &dest.id, &report);
        Some((dest.id.clone(), report))
    }

    /// The destination's lane, sized to this node's share of the
    /// deployment's `concurrency_per_destination`.
    fn lane(&self, destination: &str) -> Arc<Lane> {
        let share = lane::share(
            self.config.concurrency_per_destination,
            self.nodes.load(Ordering::Relaxed),
        );
        let mut lanes = self.lanes.lock().unwrap_or_else(PoisonError::into_inner);
        let lane = lanes
            .entry(destination.to_owned())
            .or_insert_with(|| Arc::new(Lane::new(share)));
        lane.resize(share);
        Arc::clone(lane)
    }

    /// Puts what `send` left unfinished into the store's retry state, once:
    /// the call with a delivery to each of those destinations, each with
    /// its first attempt's report, in one transaction of the store's
    /// ([`sluice_store::DeliveryStore::hand_off`]). A call the store
    /// already holds (handed off before a crash and read again) is left as
    /// it is. Returns once it is durable; on an error nothing was written
    /// and the caller tries again.
    pub async fn hand_off(&self, record: &LogRecord, sent: &Sent) -> Result<(), StoreError> {
        if sent.unfinished.is_empty() {
            return Ok(());
        }
        let targets: Vec<String> = sent.unfinished.iter().map(|(d, _)| d.clone()).collect();
        let request = AppendRequest {
            source_id: record.source_id.clone(),
            received_at: record.received_at,
            events: vec![record.to_new_event(&targets)],
        };
        let now = Utc::now();
        let reports = (sent.unfinished.iter())
            .map(|(destination, report)| {
                let mut report = report.clone();
                report.at = now;
                (destination.clone(), report)
            })
            .collect();
        self.store.hand_off(request, reports).await.map(|_| ())
    }
}
