//! Operational alerts on failing destinations (docs/alerts.md).
//!
//! - [`incident`]: the pure core, one incident state machine per destination.
//! - `payload`: the alert message and its Standard Webhooks signature.
//! - `task`: the task that feeds the core and posts the alerts, with
//!   retries, to the operator's URLs.
//!
//! The engine hands each observation over with a non-blocking `try_send`
//! ([`AlertSink::observe`]): a full queue drops the observation rather than
//! slow a delivery, and alert sends run on their own tasks and HTTP client.

pub mod incident;
mod payload;
mod task;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use sluice_signing::standard;
use tokio::sync::mpsc;

use crate::error::DeliveryError;
pub use incident::{Observation, Reason, Rules};
pub use task::start;

/// Most alert URLs.
pub const MAX_URLS: usize = 5;
/// Observations queued for the alert task before new ones are dropped.
const QUEUE: usize = 65_536;

/// What alerting needs; see docs/configuration.md, `[alerts]`.
#[derive(Clone, PartialEq)]
pub struct AlertConfig {
    /// Where alerts are posted (at most [`MAX_URLS`]); none: alerts off.
    pub urls: Vec<String>,
    /// The `whsec_…` secret alerts are signed with.
    pub secret: String,
    pub rules: Rules,
    /// How often windows are re-evaluated and, with a backlog limit, the
    /// pending backlog counted.
    pub check_every: Duration,
    /// Tries per alert before it is given up (in memory only).
    pub max_tries: u32,
    /// The pause after the first failed try; doubles per try, at most 1 min.
    pub retry_base: Duration,
    /// This node's id, carried in every alert (`data.node`).
    pub node: String,
}

impl std::fmt::Debug for AlertConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AlertConfig")
            .field("urls", &self.urls.len())
            .field("secret", &"whsec_****")
            .field("rules", &self.rules)
            .field("check_every", &self.check_every)
            .field("max_tries", &self.max_tries)
            .field("node", &self.node)
            .finish()
    }
}

impl AlertConfig {
    /// Checks ranges and the secret's form (the message never echoes it).
    pub fn validate(&self) -> Result<(), DeliveryError> {
        let bad = |m: &str| Err(DeliveryError::Config(format!("alerts: {m}")));
        if self.urls.len() > MAX_URLS {
            return bad("at most 5 urls");
        }
        if let Err(e) = standard::secret_key(&self.secret) {
            return bad(&format!("secret {e}"));
        }
        let r = &self.rules;
        if !(0.0..=1.0).contains(&r.min_success_rate) {
            return bad("min_success_rate must be between 0 and 1");
        }
        if r.window.is_zero() || self.check_every.is_zero() || self.max_tries == 0 {
            return bad("window, check interval and tries must be at least 1");
        }
        Ok(())
    }
}

/// An incident open on this node, for the dashboard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenIncident {
    pub destination_id: String,
    pub destination_name: String,
    /// `success_rate`, `delivery_dead` or `backlog`.
    pub reason: &'static str,
    pub since: DateTime<Utc>,
}

/// The engine's side: where observations go.
#[derive(Debug, Clone)]
pub struct AlertSink {
    tx: mpsc::Sender<Observed>,
}

/// One observation, with the destination it is about.
#[derive(Debug)]
struct Observed {
    destination_id: String,
    destination_name: String,
    observation: Observation,
}

impl AlertSink {
    /// Hands an observation to the alert task without waiting: dropped
    /// when the queue is full.
    pub fn observe(&self, destination_id: &str, destination_name: &str, observation: Observation) {
        let _ = self.tx.try_send(Observed {
            destination_id: destination_id.to_owned(),
            destination_name: destination_name.to_owned(),
            observation,
        });
    }
}

/// The rest of the service's side: the incidents open now.
#[derive(Debug, Clone, Default)]
pub struct AlertsHandle {
    open: Arc<Mutex<Vec<OpenIncident>>>,
}

impl AlertsHandle {
    /// The open incidents, oldest first.
    pub fn open_incidents(&self) -> Vec<OpenIncident> {
        self.open.lock().map(|v| v.clone()).unwrap_or_default()
    }
}
