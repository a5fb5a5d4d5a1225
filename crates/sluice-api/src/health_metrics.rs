//! Delivery health on `/metrics`: the overview's figures per destination
//! and window, read from the store's aggregates at each scrape (the same
//! read as the dashboard's overview: one week of hourly sums).
//!
//! - `sluice_destination_deliveries{destination, window, outcome}`: outcome
//!   counts (`delivered`, `retrying`, `dead`, `filtered`, `discarded`);
//! - `sluice_destination_success_ratio{destination, window}`: delivered ÷
//!   (delivered + retrying + dead), absent while nothing was sent;
//! - `sluice_destination_latency_milliseconds{destination, window,
//!   quantile}`: p50 and p95 of the HTTP attempts, absent without any.
//!
//! Windows are `1h`, `24h` and `7d`, ending with the current five-minute
//! bucket; they are gauges (a window slides), not counters.

use std::sync::atomic::AtomicU64;

use chrono::Utc;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use sluice_store::health::HealthWindow;

use crate::AppState;
use crate::error::ApiResult;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Outcome {
    destination: String,
    window: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Window {
    destination: String,
    window: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Quantile {
    destination: String,
    window: String,
    quantile: String,
}

type F64Gauge = Gauge<f64, AtomicU64>;

/// A registry holding the health figures as they are now.
pub async fn registry(app: &AppState) -> ApiResult<Registry> {
    let (_, rows) = crate::admin::health::read(app, HealthWindow::Day, Utc::now()).await?;
    let counts = Family::<Outcome, Gauge>::default();
    let success = Family::<Window, F64Gauge>::default();
    let latency = Family::<Quantile, F64Gauge>::default();
    for (dest, overview) in &rows {
        for f in &overview.figures {
            let window = f.window.label().to_owned();
            let c = f.counts;
            for (outcome, n) in [
                ("delivered", c.delivered),
                ("retrying", c.retrying),
                ("dead", c.dead),
                ("filtered", c.filtered),
                ("discarded", c.discarded),
            ] {
                let labels = Outcome {
                    destination: dest.id.clone(),
                    window: window.clone(),
                    outcome: outcome.to_owned(),
                };
                counts
                    .get_or_create(&labels)
                    .set(i64::try_from(n).unwrap_or(i64::MAX));
            }
            if let Some(rate) = f.success_rate {
                let labels = Window {
                    destination: dest.id.clone(),
                    window: window.clone(),
                };
                success.get_or_create(&labels).set(rate);
            }
            for (quantile, ms) in [("0.5", f.p50_ms), ("0.95", f.p95_ms)] {
                if let Some(ms) = ms {
                    let labels = Quantile {
                        destination: dest.id.clone(),
                        window: window.clone(),
                        quantile: quantile.to_owned(),
                    };
                    latency.get_or_create(&labels).set(ms as f64);
                }
            }
        }
    }
    let mut registry = Registry::default();
    registry.register(
        "sluice_destination_deliveries",
        "Delivery outcomes per destination over the window (1h, 24h, 7d), from the delivery health aggregates",
        counts,
    );
    registry.register(
        "sluice_destination_success_ratio",
        "delivered / (delivered + retrying + dead) per destination over the window",
        success,
    );
    registry.register(
        "sluice_destination_latency_milliseconds",
        "p50 and p95 latency of a destination's HTTP attempts over the window",
        latency,
    );
    Ok(registry)
}
