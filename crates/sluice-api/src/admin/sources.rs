//! `/api/v1/sources`: create, list, get, update, delete, rotate the write key,
//! and the debugger (recent events) and usage views.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use sluice_store::{NewSource, Source, SourcePatch, keys};
use utoipa::{IntoParams, ToSchema};

use super::extract::{JsonObject, Params, known_fields, opt_field, required_name};
use super::paging;
use crate::AppState;
use crate::error::{ApiError, ApiResult};
use crate::openapi::schemas::{AfterQuery, ErrorBody, List, ListPage, Page, PageQuery};
use crate::path_param::PathParam;

/// A source as the API shows it. The write key appears in full only in the
/// answers to create and rotate (`write_key`), never afterwards.
#[derive(Debug, Serialize, ToSchema)]
pub struct SourceView {
    #[schema(example = "src_4ywHJu7atksI0JlN")]
    pub id: String,
    pub name: String,
    pub enabled: bool,
    /// The write key's first 4 characters and `…`.
    #[schema(example = "FnUG…")]
    pub write_key_hint: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// The write key in full: only in the answers to create and rotate.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub write_key: Option<String>,
}

fn view(source: &Source, write_key: Option<&str>) -> SourceView {
    SourceView {
        id: source.id.clone(),
        name: source.name.clone(),
        enabled: source.enabled,
        write_key_hint: source.write_key_hint.clone(),
        created_at: source.created_at,
        updated_at: source.updated_at,
        write_key: write_key.map(str::to_owned),
    }
}

/// The body of `POST /sources`: these fields; others are refused.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSource {
    /// 1 to 200 characters, trimmed.
    pub name: String,
    /// Default `true`.
    pub enabled: Option<bool>,
}

/// The body of `PATCH /sources/{id}`: any of these; others are refused.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateSource {
    pub name: Option<String>,
    pub enabled: Option<bool>,
}

/// The fields `POST /sources` accepts.
pub const CREATE_FIELDS: &[&str] = &["name", "enabled"];

/// The fields `PATCH /sources/{id}` accepts.
pub const UPDATE_FIELDS: &[&str] = &["name", "enabled"];

#[utoipa::path(post, path = "/sources", tag = "sources", request_body = CreateSource,
    responses(
        (status = 201, description = "Created; the only answer besides rotation that shows `write_key`", body = SourceView),
        (status = 400, description = "`invalid_json`, `body_too_large`, `invalid_field`", body = ErrorBody),
    ))]
pub async fn create(
    State(app): State<Arc<AppState>>,
    JsonObject(body): JsonObject,
) -> ApiResult<(StatusCode, Json<SourceView>)> {
    create_as(&app, keys::new_id("src"), &body).await
}

/// Creates a source under the id `id`. The dashboard names a source after
/// the form that creates it, so that the form sent twice (a reload of the
/// page that answered it) finds the source the first sending made, as a
/// `409 conflict`, on whichever node it reaches, instead of making a second.
pub async fn create_as(
    app: &AppState,
    id: String,
    body: &Map<String, Value>,
) -> ApiResult<(StatusCode, Json<SourceView>)> {
    known_fields(body, CREATE_FIELDS)?;
    let name = required_name(body, "name")?;
    let enabled = opt_field(body, "enabled", Value::as_bool, "a boolean")?.unwrap_or(true);
    let key = keys::new_write_key();
    let source = app
        .store
        .create_source(NewSource {
            id,
            name,
            enabled,
            write_key_hash: keys::hash_secret(&key),
            write_key_hint: keys::hint(&key),
        })
        .await?;
    app.config_changed().await?;
    Ok((StatusCode::CREATED, Json(view(&source, Some(&key)))))
}

#[utoipa::path(get, path = "/sources", tag = "sources", params(AfterQuery),
    responses(
        (status = 200, description = "A page of the sources, oldest first", body = ListPage<SourceView>),
        (status = 400, description = "`invalid_query`", body = ErrorBody),
    ))]
pub async fn list(
    State(app): State<Arc<AppState>>,
    params: Params,
) -> ApiResult<Json<ListPage<SourceView>>> {
    let all = app.store.list_sources().await?;
    let page = paging::page(all, |s| s.id.as_str(), &params)?;
    Ok(Json(ListPage {
        data: page.data.iter().map(|s| view(s, None)).collect(),
        next_after: page.next_after,
        total: page.total,
    }))
}

#[utoipa::path(get, path = "/sources/{id}", tag = "sources", params(("id" = String, Path)),
    responses(
        (status = 200, body = SourceView),
        (status = 404, description = "`not_found`", body = ErrorBody),
    ))]
pub async fn get(
    State(app): State<Arc<AppState>>,
    PathParam(id): PathParam<String>,
) -> ApiResult<Json<SourceView>> {
    let source = find(&app, &id).await?;
    Ok(Json(view(&source, None)))
}

#[utoipa::path(patch, path = "/sources/{id}", tag = "sources", params(("id" = String, Path)),
    request_body = UpdateSource,
    responses(
        (status = 200, body = SourceView),
        (status = 400, description = "`invalid_json`, `invalid_field` (also for a field that cannot change)", body = ErrorBody),
        (status = 404, description = "`not_found`", body = ErrorBody),
    ))]
pub async fn update(
    State(app): State<Arc<AppState>>,
    PathParam(id): PathParam<String>,
    JsonObject(body): JsonObject,
) -> ApiResult<Json<SourceView>> {
    if let Some(k) = body.keys().find(|k| !UPDATE_FIELDS.contains(&k.as_str())) {
        return Err(ApiError::invalid(
            k,
            "cannot be changed (fields: name, enabled)",
        ));
    }
    let name = match body.get("name") {
        None => None,
        Some(_) => Some(required_name(&body, "name")?),
    };
    let patch = SourcePatch {
        name,
        enabled: opt_field(&body, "enabled", Value::as_bool, "a boolean")?,
        write_key: None,
    };
    let source = app
        .store
        .update_source(&id, patch)
        .await?
        .ok_or_else(|| ApiError::not_found("source"))?;
    app.config_changed().await?;
    Ok(Json(view(&source, None)))
}

#[utoipa::path(delete, path = "/sources/{id}", tag = "sources", params(("id" = String, Path)),
    responses(
        (status = 204, description = "Deleted; its write key stops working"),
        (status = 404, description = "`not_found`", body = ErrorBody),
    ))]
pub async fn delete(
    State(app): State<Arc<AppState>>,
    PathParam(id): PathParam<String>,
) -> ApiResult<StatusCode> {
    if !app.store.delete_source(&id).await? {
        return Err(ApiError::not_found("source"));
    }
    app.config_changed().await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Replaces the write key. The old key stops working at once.
#[utoipa::path(post, path = "/sources/{id}/rotate-key", tag = "sources", params(("id" = String, Path)),
    responses(
        (status = 200, description = "The source with its new `write_key`, shown this once", body = SourceView),
        (status = 404, description = "`not_found`", body = ErrorBody),
    ))]
pub async fn rotate_key(
    State(app): State<Arc<AppState>>,
    PathParam(id): PathParam<String>,
) -> ApiResult<Json<SourceView>> {
    let key = keys::new_write_key();
    let patch = SourcePatch {
        write_key: Some((keys::hash_secret(&key), keys::hint(&key))),
        ..SourcePatch::default()
    };
    let source = app
        .store
        .update_source(&id, patch)
        .await?
        .ok_or_else(|| ApiError::not_found("source"))?;
    app.config_changed().await?;
    Ok(Json(view(&source, Some(&key))))
}

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
    let events = app
        .store
        .recent_events(&id, params.i64("before")?, limit)
        .await?;
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
    let mut data = super::regulations::with_suppressed(days, suppressed);
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

pub(crate) async fn find(app: &AppState, id: &str) -> ApiResult<Source> {
    app.store
        .get_source(id)
        .await?
        .ok_or_else(|| ApiError::not_found("source"))
}
