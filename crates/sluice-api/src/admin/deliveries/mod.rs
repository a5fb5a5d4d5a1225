//! The attempt log: deliveries per destination or per message, each with its
//! attempts, and replay of dead deliveries one at a time or in bulk.
//!
//! - [`search`]: the filters beyond state and messageId (time window,
//!   call, HTTP status), shared with the dashboard's delivery log.
//! - [`window`]: the time window and the scan that applies those filters
//!   while paging.

pub mod search;
pub mod window;

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use chrono::Utc;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sluice_store::{Attempt, DeliveryFilter, DeliveryRecord, DeliveryState};
use utoipa::{IntoParams, ToSchema};

use super::destinations::find as find_destination;
use super::extract::{OptionalJsonObject, Params, known_fields, opt_field};
use crate::AppState;
use crate::audit::{After, Target, json_of, record};
use crate::error::{ApiError, ApiResult};
use crate::openapi::schemas::{ErrorBody, Page, PageQuery, Replayed};
use crate::path_param::PathParam;
use crate::principal::Actor;

/// A delivery as the API shows it. A `filtered` delivery was never sent: the
/// store keeps the name of the destination filter that dropped it in
/// `last_error`; it is shown as `filter`, and `last_error` is null (it did
/// not fail).
#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryView {
    #[serde(flatten)]
    pub record: DeliveryRecord,
    /// For a `filtered` delivery: the destination filter that dropped it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub filter: Option<String>,
}

fn view(d: &DeliveryRecord) -> DeliveryView {
    let mut record = d.clone();
    let mut filter = None;
    if d.state == DeliveryState::Filtered {
        filter = record.last_error.take();
    }
    DeliveryView { record, filter }
}

/// One delivery with every attempt, oldest first.
#[derive(Debug, Serialize, ToSchema)]
pub struct DeliveryDetail {
    pub delivery: DeliveryView,
    pub attempts: Vec<Attempt>,
}

/// Filters of the attempt log.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DeliveryQuery {
    /// Only this message's deliveries.
    pub message_id: Option<String>,
    /// Only deliveries in this state.
    pub state: Option<DeliveryState>,
}

/// The search of the attempt log beyond state and messageId
/// ([`search`]). With any of these, a page is found by reading deliveries
/// newest first, at most 2,000 per page (500 with `type`, `event`, `user`
/// or `status`): a page may hold fewer than `limit` deliveries, even none,
/// while `next_before` is set. Follow `next_before` until it is `null`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SearchQuery {
    /// Only deliveries whose last change (`updated_at`) is at or after
    /// this: RFC 3339, a UTC date and time (`2026-11-28T10:00`), a UTC date,
    /// or an age before now (`90s`, `30m`, `2h`, `7d`).
    pub since: Option<String>,
    /// Only deliveries whose last change is at or before this (same forms).
    pub until: Option<String>,
    /// Only deliveries of calls of this type (`track`, `identify`, …).
    #[serde(rename = "type")]
    #[param(rename = "type")]
    pub kind: Option<String>,
    /// Only deliveries of calls with this event name (`track`) or page or
    /// screen name.
    pub event: Option<String>,
    /// Only deliveries of calls with this `userId` or `anonymousId`.
    pub user: Option<String>,
    /// Only deliveries an attempt of which got this: an HTTP status
    /// (`503`), a class (`5xx`), or `error` (no answer: timeout, refused
    /// connection, TLS).
    pub status: Option<String>,
}

/// `destination_id` of the list across destinations.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DestinationQuery {
    /// Only this destination's deliveries.
    pub destination_id: Option<String>,
}

/// The fields of a bulk replay's body.
pub const REPLAY_FIELDS: &[&str] = &["message_id"];

/// The optional body of a bulk replay; other fields are refused.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplayBody {
    /// Only this message's dead deliveries.
    pub message_id: Option<String>,
}

/// Delivery ids are integers; anything else is a 404 in the JSON shape.
fn delivery_id(raw: &str) -> ApiResult<i64> {
    raw.parse().map_err(|_| ApiError::not_found("delivery"))
}

fn filter(params: &Params) -> ApiResult<DeliveryFilter> {
    let state = match params.str("state") {
        None => None,
        Some(s) => Some(DeliveryState::parse(s).ok_or_else(|| {
            ApiError::bad_request(
                "invalid_query",
                "state: must be one of pending, succeeded, dead, discarded, filtered",
            )
        })?),
    };
    Ok(DeliveryFilter {
        destination_id: params.str("destination_id").map(str::to_owned),
        message_id: params.str("message_id").map(str::to_owned),
        state,
        before_id: params.i64("before")?,
        limit: params.limit(50, 500)?,
    })
}

type DeliveryPage = Page<DeliveryView>;

/// The search of `params` beyond state and messageId; `400 invalid_query`
/// naming each bad parameter.
fn search(params: &Params) -> ApiResult<search::Search> {
    let (found, errors) = search::Search::from_query(&params.0, Utc::now());
    match errors.is_empty() {
        true => Ok(found),
        false => Err(ApiError::bad_request("invalid_query", errors.join("; "))),
    }
}

async fn page(
    app: &AppState,
    filter: DeliveryFilter,
    found: &search::Search,
) -> ApiResult<Json<DeliveryPage>> {
    let limit = filter.limit as usize;
    let (rows, next_before) = if found.is_open() {
        let rows = app.store.list_deliveries(&filter).await?;
        let next = (rows.len() == limit)
            .then(|| rows.last().map(|d| d.id))
            .flatten();
        (rows, next)
    } else {
        let most = match found.by_content() {
            true => search::CONTENT_SCAN,
            false => window::SCAN,
        };
        window::scan(app.store.as_ref(), &filter, found, limit, most).await?
    };
    let data = rows.iter().map(view).collect();
    Ok(Json(Page { data, next_before }))
}

/// `GET /api/v1/deliveries?message_id=&state=&destination_id=&since=&until=&type=&event=&user=&status=`:
/// across destinations.
#[utoipa::path(get, path = "/deliveries", tag = "deliveries",
    params(DestinationQuery, DeliveryQuery, SearchQuery, PageQuery),
    responses(
        (status = 200, description = "Newest first; `next_before` is a delivery id, the `before` of the next page (with a search, set whenever more may match)", body = Page<DeliveryView>),
        (status = 400, description = "`invalid_query`", body = ErrorBody),
    ))]
pub async fn list(
    State(app): State<Arc<AppState>>,
    params: Params,
) -> ApiResult<Json<DeliveryPage>> {
    let f = filter(&params)?;
    page(&app, f, &search(&params)?).await
}

/// `GET /api/v1/destinations/{id}/deliveries?state=&message_id=&since=&until=&type=&event=&user=&status=`.
#[utoipa::path(get, path = "/destinations/{id}/deliveries", tag = "deliveries",
    params(("id" = String, Path), DeliveryQuery, SearchQuery, PageQuery),
    responses(
        (status = 200, description = "Newest first; with a search, `next_before` is set whenever more may match", body = Page<DeliveryView>),
        (status = 400, description = "`invalid_query`", body = ErrorBody),
        (status = 404, description = "`not_found`", body = ErrorBody),
    ))]
pub async fn list_for_destination(
    State(app): State<Arc<AppState>>,
    PathParam(id): PathParam<String>,
    params: Params,
) -> ApiResult<Json<DeliveryPage>> {
    find_destination(&app, &id).await?;
    let mut f = filter(&params)?;
    f.destination_id = Some(id);
    page(&app, f, &search(&params)?).await
}

/// `GET /api/v1/deliveries/{id}`: the delivery and every attempt, oldest first.
#[utoipa::path(get, path = "/deliveries/{id}", tag = "deliveries", params(("id" = i64, Path)),
    responses(
        (status = 200, body = DeliveryDetail),
        (status = 404, description = "`not_found` (also for an id that is not an integer)", body = ErrorBody),
    ))]
pub async fn get(
    State(app): State<Arc<AppState>>,
    PathParam(id): PathParam<String>,
) -> ApiResult<Json<DeliveryDetail>> {
    let id = delivery_id(&id)?;
    let delivery = app
        .store
        .get_delivery(id)
        .await?
        .ok_or_else(|| ApiError::not_found("delivery"))?;
    // Attempts keep masked URLs; rows written before masking are masked here.
    let mut attempts = app.store.list_attempts(id).await?;
    for a in &mut attempts {
        a.url = sluice_outbound::mask::mask_url(&a.url);
    }
    Ok(Json(DeliveryDetail {
        delivery: view(&delivery),
        attempts,
    }))
}

/// `POST /api/v1/deliveries/{id}/replay`: one dead delivery back to pending.
/// Deliveries are addressed by (destination, messageId), the receivers'
/// dedup key, so a client that reused a messageId replays all of them.
#[utoipa::path(post, path = "/deliveries/{id}/replay", tag = "deliveries", params(("id" = i64, Path)),
    responses(
        (status = 200, body = Replayed),
        (status = 404, description = "`not_found`", body = ErrorBody),
        (status = 409, description = "`not_dead`: only dead deliveries can be replayed", body = ErrorBody),
    ))]
pub async fn replay_one(
    State(app): State<Arc<AppState>>,
    actor: Actor,
    PathParam(id): PathParam<i64>,
) -> ApiResult<Json<Replayed>> {
    let delivery = app
        .store
        .get_delivery(id)
        .await?
        .ok_or_else(|| ApiError::not_found("delivery"))?;
    if delivery.state != DeliveryState::Dead {
        return Err(ApiError::new(
            axum::http::StatusCode::CONFLICT,
            "not_dead",
            format!(
                "delivery {id} is {}; only dead deliveries can be replayed",
                delivery.state.as_str()
            ),
        ));
    }
    let before = json!({"destination_id": delivery.destination_id,
        "message_id": delivery.message_id, "state": delivery.state.as_str()});
    let f = DeliveryFilter {
        destination_id: Some(delivery.destination_id),
        message_id: Some(delivery.message_id),
        ..DeliveryFilter::default()
    };
    let target = Target::new("delivery", "replay", Some(&id.to_string()));
    replay(&app, &actor, target, Some(before), f).await
}

/// Replays the deliveries `f` selects, recorded in the audit log with how
/// many moved back to pending.
async fn replay(
    app: &AppState,
    actor: &Actor,
    target: Target,
    before: Option<Value>,
    f: DeliveryFilter,
) -> ApiResult<Json<Replayed>> {
    let mut selection = before.unwrap_or_else(|| json!({}));
    selection["message_id"] = json!(f.message_id);
    let change = async {
        let replayed = app.store.replay(&f, Utc::now()).await?;
        (app.on_commit)(true);
        Ok(Json(Replayed { replayed }))
    };
    record(
        app,
        actor,
        target,
        json_of(&selection),
        change,
        |Json(r)| After::state(json_of(r)),
    )
    .await
}

/// `POST /api/v1/destinations/{id}/replay`: every dead delivery of the
/// destination, or only those of `{"message_id": …}`.
#[utoipa::path(post, path = "/destinations/{id}/replay", tag = "deliveries", params(("id" = String, Path)),
    request_body(content = Option<ReplayBody>, description = "Optional"),
    responses(
        (status = 200, description = "How many dead deliveries moved back to pending", body = Replayed),
        (status = 400, description = "`invalid_json`, `invalid_field`", body = ErrorBody),
        (status = 404, description = "`not_found`", body = ErrorBody),
    ))]
pub async fn replay_bulk(
    State(app): State<Arc<AppState>>,
    actor: Actor,
    PathParam(id): PathParam<String>,
    OptionalJsonObject(body): OptionalJsonObject,
) -> ApiResult<Json<Replayed>> {
    find_destination(&app, &id).await?;
    // A misspelt `message_id` must not widen the replay to every dead delivery.
    known_fields(&body, REPLAY_FIELDS)?;
    let f = DeliveryFilter {
        destination_id: Some(id.clone()),
        message_id: opt_field(&body, "message_id", Value::as_str, "a string")?.map(str::to_owned),
        ..DeliveryFilter::default()
    };
    let target = Target::new("destination", "replay", Some(&id));
    replay(&app, &actor, target, None, f).await
}
