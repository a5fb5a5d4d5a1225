//! The read-only views of a source: the debugger (its recent events) and
//! its usage per day.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::{IntoParams, ToSchema};

use super::find;
use crate::AppState;
use crate::admin::extract::Params;
use crate::error::{ApiError, ApiResult};
use crate::openapi::schemas::{ErrorBody, List, Page, PageQuery};
use crate::path_param::PathParam;

/// The debugger: a source's events as stored after enrichment, newest first.
/// `?limit=` (default 50, at most 500) and `?before=<seq>` page backwards.
#[utoipa::path(get, path = "/sources/{id}/events", tag = "sources",
    params(("id" = String, Path), PageQuery),
    responses(
        (status = 200, description = "Newest first; `next_before` is a `seq`", body = Page<StoredEvent>),
        (status = 400, description = "`invalid_query`", body = ErrorBody),
        (status = 404, description = "`not_found`", body = ErrorBody),
    ))]
pub async fn events(
    State(app): State<Arc<AppState>>,
    PathParam(id): PathParam<String>,
    params: Params,
) -> ApiResult<Json<Page<StoredEvent>>> {
    find(&app, &id).await?;
    let limit = params.limit(50, 500)?;
    let before = params.i64("before")?;
    // In the Kafka shape calls live in the topic, and the log answers.
    let events = match app.log.recent(&id, before, limit).await? {
        Some(events) => events,
        None => app.store.recent_events(&id, before, limit).await?,
    };
    let next_before = (events.len() == limit as usize)
        .then(|| events.last().map(|e| e.seq))
        .flatten();
    let data = events
        .into_iter()
        .map(|e| StoredEvent {
            event: serde_json::from_str(&e.body).unwrap_or(Value::Null),
            seq: e.seq,
            message_id: e.message_id,
            event_type: e.event_type,
            received_at: e.received_at,
            blocked: e.blocked.is_some(),
            blocked_by: e.blocked,
        })
        .collect();
    Ok(Json(Page { data, next_before }))
}

/// API calls and events received per UTC day, counted at ingest before any
/// filtering: blocked calls count as received, and again under `blocked`
/// (with `blocked_events` by event name). `?from=YYYY-MM-DD&to=YYYY-MM-DD`,
/// default the last 30 days.
#[utoipa::path(get, path = "/sources/{id}/usage", tag = "sources",
    params(("id" = String, Path), UsageQuery),
    responses(
        (status = 200, description = "Days with traffic, oldest first", body = List<UsageView>),
        (status = 400, description = "`invalid_query`", body = ErrorBody),
        (status = 404, description = "`not_found`", body = ErrorBody),
    ))]
pub async fn usage(
    State(app): State<Arc<AppState>>,
    PathParam(id): PathParam<String>,
    params: Params,
) -> ApiResult<Json<List<UsageView>>> {
    find(&app, &id).await?;
    let today = Utc::now().date_naive();
    let day = |name: &str, default: chrono::NaiveDate| -> ApiResult<String> {
        match params.str(name) {
            None => Ok(default.to_string()),
            Some(s) => chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
                .map(|d| d.to_string())
                .map_err(|_| {
                    ApiError::bad_request("invalid_query", format!("{name}: must be YYYY-MM-DD"))
                }),
        }
    };
    let from = day("from", today - Duration::days(29))?;
    let to = day("to", today)?;
    let days = app.store.usage(&id, &from, &to).await?;
    let blocked = app.store.blocked_usage(&id, &from, &to).await?;
    let suppressed = app.store.suppressed_usage(&id, &from, &to).await?;
    let mut data = crate::admin::regulations::with_suppressed(days, suppressed);
    for d in &mut data {
        let on_day = || blocked.iter().filter(|b| b.day == d.day);
        d.blocked_events = on_day()
            .map(|b| (b.event.clone(), json!(b.count)))
            .collect();
        d.blocked = on_day().map(|b| b.count).sum();
    }
    Ok(Json(List { data }))
}

/// One entry of the debugger.
#[derive(Debug, Serialize, ToSchema)]
pub struct StoredEvent {
    /// The page cursor, larger for newer calls. It can pass 2^53 (in the
    /// Kafka shape it is built from the acceptance time, partition and
    /// offset): read it as a 64-bit integer.
    pub seq: i64,
    pub message_id: String,
    #[serde(rename = "type")]
    pub event_type: String,
    pub received_at: DateTime<Utc>,
    /// Whether a source rule blocked the call (it is stored, not delivered).
    pub blocked: bool,
    /// The rule that blocked it: `blocked_events` or `tracking_plan`.
    pub blocked_by: Option<String>,
    /// The message as stored after enrichment: what webhooks receive.
    #[schema(value_type = Object)]
    pub event: Value,
}

/// `from` and `to` of the usage view.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct UsageQuery {
    /// First UTC day, `YYYY-MM-DD`, inclusive; default 29 days before today.
    pub from: Option<chrono::NaiveDate>,
    /// Last UTC day, inclusive; default today.
    pub to: Option<chrono::NaiveDate>,
}

/// One UTC day of usage.
#[derive(Debug, Serialize, ToSchema)]
pub struct UsageView {
    /// `YYYY-MM-DD`.
    #[schema(format = Date)]
    pub day: String,
    /// Accepted requests.
    pub api_calls: u64,
    /// Calls stored (a batch of 2500 is 1 API call and 2500 events).
    pub events: u64,
    /// Calls dropped because their `userId` is suppressed.
    pub suppressed: u64,
    /// Calls answered 200 but not stored: the source had committed their
    /// `messageId` within the deduplication window (a client's resend).
    pub duplicates: u64,
    /// `events + suppressed + duplicates`.
    pub received: u64,
    /// Calls blocked by the source's rules.
    pub blocked: u64,
    /// `blocked` per event name.
    #[schema(value_type = std::collections::HashMap<String, u64>)]
    pub blocked_events: serde_json::Map<String, Value>,
}
