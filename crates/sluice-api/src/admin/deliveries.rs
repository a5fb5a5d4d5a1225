//! The attempt log: deliveries per destination or per message, each with its
//! attempts, and replay of dead deliveries one at a time or in bulk.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use chrono::Utc;
use serde_json::{Value, json};
use sluice_store::{DeliveryFilter, DeliveryRecord, DeliveryState};

use super::destinations::find as find_destination;
use super::extract::{OptionalJsonObject, Params, opt_field};
use crate::AppState;
use crate::error::{ApiError, ApiResult};

/// A delivery as the API shows it. A `filtered` delivery was never sent: the
/// store keeps the name of the destination filter that dropped it in
/// `last_error`; it is shown as `filter`, and `last_error` is null (it did
/// not fail).
fn view(d: &DeliveryRecord) -> Value {
    let mut v = json!(d);
    if d.state == DeliveryState::Filtered
        && let Some(obj) = v.as_object_mut()
    {
        obj.insert("filter".into(), json!(d.last_error));
        obj.insert("last_error".into(), Value::Null);
    }
    v
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

async fn page(app: &AppState, filter: DeliveryFilter) -> ApiResult<Json<Value>> {
    let limit = filter.limit as usize;
    let rows = app.store.list_deliveries(&filter).await?;
    let next_before = (rows.len() == limit)
        .then(|| rows.last().map(|d| d.id))
        .flatten();
    let data: Vec<Value> = rows.iter().map(view).collect();
    Ok(Json(json!({ "data": data, "next_before": next_before })))
}

/// `GET /api/v1/deliveries?message_id=&state=&destination_id=`: across destinations.
pub async fn list(State(app): State<Arc<AppState>>, params: Params) -> ApiResult<Json<Value>> {
    page(&app, filter(&params)?).await
}

/// `GET /api/v1/destinations/{id}/deliveries?state=&message_id=`.
pub async fn list_for_destination(
    State(app): State<Arc<AppState>>,
    Path(id): Path<String>,
    params: Params,
) -> ApiResult<Json<Value>> {
    find_destination(&app, &id).await?;
    let mut f = filter(&params)?;
    f.destination_id = Some(id);
    page(&app, f).await
}

/// `GET /api/v1/deliveries/{id}`: the delivery and every attempt, oldest first.
pub async fn get(
    State(app): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
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
    Ok(Json(
        json!({ "delivery": view(&delivery), "attempts": attempts }),
    ))
}

/// `POST /api/v1/deliveries/{id}/replay`: one dead delivery back to pending.
/// Deliveries are addressed by (destination, messageId), the receivers'
/// dedup key, so a client that reused a messageId replays all of them.
pub async fn replay_one(
    State(app): State<Arc<AppState>>,
    Path(id): Path<i64>,
) -> ApiResult<Json<Value>> {
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
    let f = DeliveryFilter {
        destination_id: Some(delivery.destination_id),
        message_id: Some(delivery.message_id),
        ..DeliveryFilter::default()
    };
    let replayed = app.store.replay(&f, Utc::now()).await?;
    (app.on_commit)();
    Ok(Json(json!({ "replayed": replayed })))
}

/// `POST /api/v1/destinations/{id}/replay`: every dead delivery of the
/// destination, or only those of `{"message_id": …}`.
pub async fn replay_bulk(
    State(app): State<Arc<AppState>>,
    Path(id): Path<String>,
    OptionalJsonObject(body): OptionalJsonObject,
) -> ApiResult<Json<Value>> {
    find_destination(&app, &id).await?;
    let f = DeliveryFilter {
        destination_id: Some(id),
        message_id: opt_field(&body, "message_id", Value::as_str, "a string")?.map(str::to_owned),
        ..DeliveryFilter::default()
    };
    let replayed = app.store.replay(&f, Utc::now()).await?;
    (app.on_commit)();
    Ok(Json(json!({ "replayed": replayed })))
}
