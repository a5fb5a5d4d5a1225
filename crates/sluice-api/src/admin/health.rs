//! `GET /api/v1/delivery-health`: every destination's delivery health at a
//! glance: outcome counts, success rate and p50/p95 latency over the last
//! hour, day and week, and one window's chart. Read from the aggregates
//! the nodes merge every few seconds (`sluice_store::health`), never from
//! the delivery log: the last twelve five-minute buckets and the last
//! week's hours.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sluice_store::Destination;
use sluice_store::health::{
    self, BUCKET_MS, Bar, Counts, Figures, HOUR_MS, HealthWindow, Overview, bucket_end,
};
use utoipa::{IntoParams, ToSchema};

use super::extract::Params;
use crate::AppState;
use crate::error::{ApiError, ApiResult};
use crate::openapi::schemas::ErrorBody;

/// The query of the overview.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct HealthQuery {
    /// The window the chart shows: `1h` (12 five-minute bars), `24h` (24
    /// hourly bars, the default) or `7d` (28 six-hour bars).
    pub window: Option<String>,
}

/// Outcome counts.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
pub struct CountsView {
    /// Deliveries that succeeded.
    pub delivered: u64,
    /// Attempt rounds that failed and were scheduled again.
    pub retrying: u64,
    /// Deliveries given up.
    pub dead: u64,
    /// Calls a destination filter dropped: never sent.
    pub filtered: u64,
    /// Deliveries dropped unsent: the destination was off or deleted.
    pub discarded: u64,
}

impl From<Counts> for CountsView {
    fn from(c: Counts) -> Self {
        CountsView {
            delivered: c.delivered,
            retrying: c.retrying,
            dead: c.dead,
            filtered: c.filtered,
            discarded: c.discarded,
        }
    }
}

/// One window's figures.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct WindowView {
    /// `1h`, `24h` or `7d`.
    pub window: String,
    #[serde(flatten)]
    pub counts: CountsView,
    /// delivered ÷ (delivered + retrying + dead); null when nothing was sent.
    pub success_rate: Option<f64>,
    /// Median latency of the HTTP attempts, milliseconds.
    pub p50_ms: Option<u64>,
    /// 95th percentile latency of the HTTP attempts, milliseconds.
    pub p95_ms: Option<u64>,
    /// HTTP attempts the percentiles are read from.
    pub attempts: u64,
}

impl From<&Figures> for WindowView {
    fn from(f: &Figures) -> Self {
        WindowView {
            window: f.window.label().to_owned(),
            counts: f.counts.into(),
            success_rate: f.success_rate,
            p50_ms: f.p50_ms,
            p95_ms: f.p95_ms,
            attempts: f.attempts,
        }
    }
}

/// One bar of the chart.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct BarView {
    pub start: DateTime<Utc>,
    #[serde(flatten)]
    pub counts: CountsView,
    pub p95_ms: Option<u64>,
}

impl From<&Bar> for BarView {
    fn from(b: &Bar) -> Self {
        BarView {
            start: DateTime::from_timestamp_millis(b.start).unwrap_or_default(),
            counts: b.counts.into(),
            p95_ms: b.p95_ms,
        }
    }
}

/// One destination's health.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DestinationHealth {
    pub id: String,
    pub name: String,
    pub enabled: bool,
    /// The last hour, day and week, in that order.
    pub windows: Vec<WindowView>,
    /// The chosen window's chart, oldest bar first.
    pub chart: Vec<BarView>,
}

/// The overview.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct HealthOverview {
    /// The window the charts show.
    pub window: String,
    /// The end of the current five-minute bucket, where the hour ends;
    /// the day and the week end with the current hour.
    pub until: DateTime<Utc>,
    /// Every destination, in the order of the destination list.
    pub destinations: Vec<DestinationHealth>,
}

/// The overview at `now` as the store holds it: each destination with its
/// figures and `chart`'s bars; and where the newest bucket read ends.
pub async fn read(
    app: &AppState,
    chart: HealthWindow,
    now: DateTime<Utc>,
) -> ApiResult<(i64, Vec<(Destination, Overview)>)> {
    let now = now.timestamp_millis();
    let destinations = app.store.list_destinations().await?;
    let fine = app
        .store
        .read_health(&health::fine(bucket_end(now, BUCKET_MS)))
        .await?;
    let hourly = app
        .store
        .read_health(&health::hourly(bucket_end(now, HOUR_MS)))
        .await?;
    let ids: Vec<String> = destinations.iter().map(|d| d.id.clone()).collect();
    let overviews = health::overview(now, &ids, &fine, &hourly, chart);
    Ok((
        bucket_end(now, BUCKET_MS),
        destinations.into_iter().zip(overviews).collect(),
    ))
}

/// The chart window a query names; `24h` when it names none.
pub fn window(params: &Params) -> ApiResult<HealthWindow> {
    match params.str("window") {
        None => Ok(HealthWindow::Day),
        Some(w) => HealthWindow::parse(w).ok_or_else(|| {
            ApiError::bad_request("invalid_query", "window: must be one of 1h, 24h, 7d")
        }),
    }
}

/// `GET /api/v1/delivery-health?window=`.
#[utoipa::path(get, path = "/delivery-health", tag = "deliveries",
    params(HealthQuery),
    responses(
        (status = 200, description = "Every destination's counts, success rate and latency over 1 h, 24 h and 7 d, and the chosen window's chart", body = HealthOverview),
        (status = 400, description = "`invalid_query`", body = ErrorBody),
    ))]
pub async fn overview(
    State(app): State<Arc<AppState>>,
    params: Params,
) -> ApiResult<Json<HealthOverview>> {
    let chart = window(&params)?;
    let (end, rows) = read(&app, chart, Utc::now()).await?;
    let destinations = rows
        .into_iter()
        .map(|(d, o)| DestinationHealth {
            id: d.id,
            name: d.name,
            enabled: d.enabled,
            windows: o.figures.iter().map(WindowView::from).collect(),
            chart: o.bars.iter().map(BarView::from).collect(),
        })
        .collect();
    Ok(Json(HealthOverview {
        window: chart.label().to_owned(),
        until: DateTime::from_timestamp_millis(end).unwrap_or_default(),
        destinations,
    }))
}
