//! The alert task: feeds the [`Tracker`] with the engine's observations and
//! the clock (and, with a backlog limit, the pending counts it reads), and
//! posts each event to every alert URL on a task of its own, with retries.
//! Nothing is persisted: alerts still being retried at shutdown are lost.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::Utc;
use sluice_signing::standard;
use sluice_store::{DeliveryFilter, DeliveryState, Store, WebhookUrl};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use super::incident::{Event, EventKind, Observation, Tracker};
use super::payload::{self, Alert};
use super::{AlertConfig, AlertSink, AlertsHandle, Observed, OpenIncident, QUEUE};
use crate::config::DeliveryConfig;
use crate::error::DeliveryError;
use crate::policy::Class;
use crate::sender::{Job, Sender};

/// Longest pause between two tries of one alert.
const MAX_PAUSE: Duration = Duration::from_secs(60);

/// Validates `config` and starts the alert task; it ends when `stop` turns
/// true. Alerts go out through their own HTTP client, built from
/// `delivery` (the same timeout and network guard as deliveries).
pub fn start(
    config: AlertConfig,
    delivery: &DeliveryConfig,
    store: Arc<dyn Store>,
    stop: watch::Receiver<bool>,
) -> Result<(AlertSink, AlertsHandle, JoinHandle<()>), DeliveryError> {
    config.validate()?;
    let key = standard::secret_key(&config.secret)
        .map_err(|e| DeliveryError::Config(format!("alerts: secret {e}")))?;
    let sender = Arc::new(Sender::new(delivery)?);
    let (tx, rx) = mpsc::channel(QUEUE);
    let handle = AlertsHandle::default();
    let run = Run {
        tracker: Tracker::new(config.rules),
        names: HashMap::new(),
        incidents: HashMap::new(),
        open: handle.open.clone(),
        out: Out {
            urls: config
                .urls
                .iter()
                .map(|url| WebhookUrl {
                    url: url.clone(),
                    headers: Vec::new(),
                })
                .collect(),
            key: Arc::new(key),
            sender,
            max_tries: config.max_tries,
            retry_base: config.retry_base,
        },
        config,
    };
    let task = tokio::spawn(run.run(rx, store, stop));
    Ok((AlertSink { tx }, handle, task))
}

struct Run {
    config: AlertConfig,
    tracker: Tracker,
    /// Destination names, for the payload and the dashboard.
    names: HashMap<String, String>,
    /// The id of each destination's open incident.
    incidents: HashMap<String, String>,
    open: Arc<Mutex<Vec<OpenIncident>>>,
    out: Out,
}

impl Run {
    async fn run(
        mut self,
        mut rx: mpsc::Receiver<Observed>,
        store: Arc<dyn Store>,
        mut stop: watch::Receiver<bool>,
    ) {
        let mut tick = tokio::time::interval(self.config.check_every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                observed = rx.recv() => {
                    let Some(o) = observed else { break };
                    self.names.insert(o.destination_id.clone(), o.destination_name);
                    let event = self.tracker.observe(&o.destination_id, o.observation, Instant::now());
                    if let Some(event) = event {
                        self.handle(event);
                    }
                }
                _ = tick.tick() => {
                    self.check_destinations(store.as_ref()).await;
                    for event in self.tracker.tick(Instant::now()) {
                        self.handle(event);
                    }
                }
                changed = stop.changed() => {
                    if changed.is_err() || *stop.borrow() {
                        break;
                    }
                }
            }
        }
    }

    /// Forgets destinations switched off or deleted (closing their
    /// incidents without an alert) and, with a backlog limit, reads each
    /// enabled one's pending count, up to one over the limit (a count past
    /// it changes nothing).
    async fn check_destinations(&mut self, store: &dyn Store) {
        let destinations = match store.list_destinations().await {
            Ok(d) => d,
            Err(e) => {
                tracing::debug!(error = %e, "alerts: listing destinations failed");
                return;
            }
        };
        let tracked: Vec<String> = self.names.keys().cloned().collect();
        for id in tracked {
            if !destinations.iter().any(|d| d.enabled && d.id == id) {
                self.names.remove(&id);
                if self.tracker.forget(&id) {
                    self.incidents.remove(&id);
                    tracing::info!(destination = %id, "alert incident closed: destination switched off or deleted");
                    self.publish();
                }
            }
        }
        let limit = self.config.rules.backlog_limit;
        if limit == 0 {
            return;
        }
        for dest in destinations.into_iter().filter(|d| d.enabled) {
            let filter = DeliveryFilter {
                destination_id: Some(dest.id.clone()),
                message_id: None,
                state: Some(DeliveryState::Pending),
                before_id: None,
                limit: u32::try_from(limit.saturating_add(1)).unwrap_or(u32::MAX),
            };
            let Ok(pending) = store.list_deliveries(&filter).await else {
                continue;
            };
            self.names.insert(dest.id.clone(), dest.name);
            let n = u64::try_from(pending.len()).unwrap_or(u64::MAX);
            if let Some(event) =
                self.tracker
                    .observe(&dest.id, Observation::Backlog(n), Instant::now())
            {
                self.handle(event);
            }
        }
    }

    fn handle(&mut self, event: Event) {
        let id = event.destination_id.clone();
        let incident = if event.kind == EventKind::Recovered {
            self.incidents.remove(&id)
        } else {
            let incident = format!("inc_{:016x}", rand::random::<u64>());
            self.incidents.insert(id.clone(), incident.clone());
            Some(incident)
        }
        .unwrap_or_else(|| format!("inc_{:016x}", rand::random::<u64>()));
        let name = self.names.get(&id).cloned().unwrap_or_default();
        tracing::warn!(
            destination = %id,
            alert = event.kind.as_str(),
            reason = event.reason.as_str(),
            incident = %incident,
            "destination alert"
        );
        let alert = payload::build(
            &event,
            &name,
            &incident,
            self.config.rules.window,
            &self.config.node,
            Utc::now(),
        );
        self.publish();
        for url in &self.out.urls {
            tokio::spawn(self.out.clone().send(url.clone(), alert.clone()));
        }
    }

    /// Refreshes what the dashboard shows.
    fn publish(&self) {
        let now = Instant::now();
        let mut open: Vec<OpenIncident> = self
            .tracker
            .open()
            .map(|(id, o)| OpenIncident {
                destination_id: id.to_owned(),
                destination_name: self.names.get(id).cloned().unwrap_or_default(),
                reason: o.reason.as_str(),
                since: Utc::now()
                    - chrono::Duration::from_std(now.saturating_duration_since(o.since))
                        .unwrap_or_default(),
            })
            .collect();
        open.sort_by_key(|o| o.since);
        if let Ok(mut shown) = self.open.lock() {
            *shown = open;
        }
    }
}

/// What sending needs, cloned into each send's task.
#[derive(Clone)]
struct Out {
    urls: Vec<WebhookUrl>,
    key: Arc<Vec<u8>>,
    sender: Arc<Sender>,
    max_tries: u32,
    retry_base: Duration,
}

impl Out {
    /// Posts `alert` to `url` until it is taken (2xx) or the tries run out;
    /// each try is signed afresh (a new `webhook-timestamp`).
    async fn send(self, url: WebhookUrl, alert: Alert) {
        for attempt in 1..=self.max_tries {
            let job = Job {
                delivery_id: 0,
                attempt,
                message_id: alert.id.clone(),
                body: alert.body.clone(),
                signature: None,
                standard: Some(payload::headers(&self.key, &alert, Utc::now())),
                destination: None,
            };
            let result = self.sender.send_one(&url, &job).await;
            if result.verdict.class == Class::Success {
                return;
            }
            if attempt == self.max_tries {
                tracing::error!(
                    host = %result.host,
                    alert = %alert.id,
                    tries = attempt,
                    error = result.error_kind.unwrap_or("unknown"),
                    "alert not delivered; giving up"
                );
                return;
            }
            let factor = 1u32.checked_shl(attempt - 1).unwrap_or(u32::MAX);
            tokio::time::sleep(self.retry_base.saturating_mul(factor).min(MAX_PAUSE)).await;
        }
    }
}
