//! The API's shared state: the metrics registry and everything a handler
//! reads, wired to the engines it wakes.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::registry::Registry;
use sluice_api::admin::webhook_settings;
use sluice_api::suppression::Suppressions;
use sluice_api::{AppState, BodyBudget, Metrics, MetricsAccess, RouteTable};
use sluice_schema::Tracker;
use sluice_store::{Store, keys};

use super::workers::Engines;
use crate::config::Config;
use crate::{alerts, delivery_metrics, log_metrics, profile_metrics};

/// The registry `/metrics` serves: the API's metrics, the engines'
/// counters, and the pending cap's counter (returned for its task).
pub(super) fn registry(engines: &Engines) -> (Registry, Arc<Metrics>, Counter) {
    let mut registry = Registry::default();
    let metrics = Arc::new(Metrics::register(&mut registry));
    delivery_metrics::register(&mut registry, engines.delivery.clone());
    if let Some(handle) = &engines.profiles {
        profile_metrics::register(&mut registry, handle.clone());
    }
    if let Some(counters) = &engines.log_counters {
        log_metrics::register(&mut registry, counters.clone());
    }
    let capped = Counter::<u64>::default();
    registry.register(
        "sluice_deliveries_dead_lettered_pending_cap",
        "Pending deliveries dead-lettered because their destination was over delivery.max_pending_per_destination",
        capped.clone(),
    );
    (registry, metrics, capped)
}

/// What the API state is made of, besides the configuration and engines.
pub(super) struct Parts {
    pub(super) store: Arc<dyn Store>,
    pub(super) log: Arc<dyn sluice_store::EventLog>,
    pub(super) routes: RouteTable,
    pub(super) suppressions: Arc<Suppressions>,
    pub(super) admin_token_hash: String,
    pub(super) registry: Registry,
    pub(super) metrics: Arc<Metrics>,
    pub(super) ready: Arc<AtomicBool>,
    pub(super) outbound: webhook_settings::Rules,
    pub(super) schema: Option<Arc<Tracker>>,
}

/// The API's state: a commit wakes delivery and the profile engine, a
/// configuration change drops delivery's cached destinations.
pub(super) fn app_state(config: &Config, engines: &Engines, parts: Parts) -> Arc<AppState> {
    let notify = engines.delivery.clone();
    let wake_profiles = engines.profiles.clone();
    let invalidate = engines.delivery.clone();
    let alerts_view = engines.alerting.as_ref().map(|(_, view, _)| view.clone());
    Arc::new(AppState {
        store: parts.store,
        log: parts.log,
        store_timeout: Duration::from_millis(config.storage.timeout_ms),
        routes: parts.routes,
        suppressions: parts.suppressions,
        limits: config.limits(),
        trust_forwarded_for: config.trust_forwarded_for,
        admin_token_hash: parts.admin_token_hash,
        metrics_access: MetricsAccess {
            token_hash: config.metrics.token.as_deref().map(keys::hash_secret),
            separate_listener: config.metrics.listen.is_some(),
        },
        bodies: BodyBudget::new(
            config.http.body_budget_bytes,
            config.http.anonymous_body_budget_bytes,
            Duration::from_millis(config.http.body_timeout_ms),
        ),
        on_commit: Arc::new(move |claimable| {
            if claimable {
                notify.notify();
            }
            if let Some(p) = &wake_profiles {
                p.notify();
            }
        }),
        on_config_change: Arc::new(move || invalidate.invalidate_destinations()),
        metrics: parts.metrics,
        registry: Arc::new(parts.registry),
        ready: parts.ready,
        outbound: parts.outbound,
        schema: parts.schema,
        incidents: alerts::incidents(alerts_view),
        tally: engines.tally.clone(),
    })
}
