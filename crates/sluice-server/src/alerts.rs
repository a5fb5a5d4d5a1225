//! Starts alerting when `[alerts]` names URLs (docs/alerts.md).

use std::sync::Arc;
use std::time::Duration;

use sluice_delivery::DeliveryConfig;
use sluice_delivery::alerts::{self, AlertConfig, AlertSink, AlertsHandle, Rules};
use sluice_store::Store;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::config::Config;

/// The alert task, when alerts are configured: the engine's sink, the
/// dashboard's view, and the task.
pub type Started = Option<(AlertSink, AlertsHandle, JoinHandle<()>)>;

pub fn start(
    config: &Config,
    delivery: &DeliveryConfig,
    store: Arc<dyn Store>,
    stop: watch::Receiver<bool>,
) -> Result<Started, sluice_delivery::DeliveryError> {
    let a = &config.alerts;
    if a.urls.is_empty() {
        return Ok(None);
    }
    let node = store.node_id().to_owned();
    let alert_config = AlertConfig {
        urls: a.urls.clone(),
        secret: a.secret.clone().unwrap_or_default(),
        rules: Rules {
            window: Duration::from_secs(a.window_secs),
            min_success_rate: a.min_success_rate,
            min_attempts: a.min_attempts,
            backlog_limit: a.backlog_limit,
        },
        check_every: Duration::from_millis(a.check_interval_ms),
        max_tries: a.max_tries,
        retry_base: Duration::from_millis(a.retry_base_ms.max(1)),
        node,
    };
    tracing::info!(
        urls = a.urls.len(),
        window_secs = a.window_secs,
        "destination alerts on"
    );
    let started = alerts::start(alert_config, delivery, store, stop)?;
    Ok(Some(started))
}

/// The dashboard's view of the open incidents.
pub fn incidents(view: Option<AlertsHandle>) -> sluice_api::Incidents {
    Arc::new(move || {
        view.as_ref()
            .map(AlertsHandle::open_incidents)
            .unwrap_or_default()
            .into_iter()
            .map(|i| sluice_api::Incident {
                destination_id: i.destination_id,
                destination_name: i.destination_name,
                reason: i.reason.to_owned(),
                since: i.since,
            })
            .collect()
    })
}
