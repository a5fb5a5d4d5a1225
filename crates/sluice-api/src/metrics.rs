//! Prometheus metrics of the HTTP surface.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// The route pattern (`/v1/{kind}`), never the raw path, so that
    /// cardinality stays bounded.
    pub path: String,
    pub status: u16,
}

/// Counters and histograms shared by the handlers.
#[derive(Clone)]
pub struct Metrics {
    pub requests: Family<RequestLabels, Counter>,
    pub events_accepted: Counter,
    pub events_rejected: Counter,
    /// Events dropped because their source had committed their messageId
    /// within the deduplication window.
    pub events_duplicate: Counter,
    pub commit_seconds: Histogram,
}

impl Metrics {
    /// Creates the metrics and registers them under `sluice_`.
    pub fn register(registry: &mut Registry) -> Self {
        let m = Metrics {
            requests: Family::default(),
            events_accepted: Counter::default(),
            events_rejected: Counter::default(),
            events_duplicate: Counter::default(),
            // 0.1 ms … ~3.3 s
            commit_seconds: Histogram::new(exponential_buckets(0.0001, 2.0, 16)),
        };
        registry.register(
            "sluice_http_requests",
            "HTTP requests by route and status",
            m.requests.clone(),
        );
        registry.register(
            "sluice_events_accepted",
            "Events committed by the collection API",
            m.events_accepted.clone(),
        );
        registry.register(
            "sluice_events_rejected",
            "Events in requests the collection API refused",
            m.events_rejected.clone(),
        );
        registry.register(
            "sluice_events_duplicate",
            "Events answered 200 but not stored: their source had committed the messageId within the deduplication window",
            m.events_duplicate.clone(),
        );
        registry.register(
            "sluice_commit_duration_seconds",
            "Time from handing events to the store until they were committed",
            m.commit_seconds.clone(),
        );
        m
    }
}
