//! `/api/v1/sources`: create, list, get, update, delete, rotate the write key,
//! and the debugger (recent events) and usage views.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use chrono::{Duration, Utc};
use serde_json::{Value, json};
use sluice_store::{NewSource, Source, SourcePatch, keys};

use super::extract::{JsonObject, Params, opt_field, required_name};
use crate::AppState;
use crate::error::{ApiError, ApiResult};

/// A source as the API shows it. The write key appears in full only in the
/// answers to create and rotate (`write_key`), never afterwards.
fn view(source: &Source, write_key: Option<&str>) -> Value {
    let mut v = json!({
        "id": source.id,
        "name": source.name,
        "enabled": source.enabled,
        "write_key_hint": source.write_key_hint,
        "created_at": source.created_at,
        "updated_at": source.updated_at,
    });
    if let (Some(key), Some(obj)) = (write_key, v.as_object_mut()) {
        obj.insert("write_key".into(), Value::String(key.to_owned()));
    }
    v
}

pub async fn create(
    State(app): State<Arc<AppState>>,
    JsonObject(body): JsonObject,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let name = required_name(&body, "name")?;
    let enabled = opt_field(&body, "enabled", Value::as_bool, "a boolean")?.unwrap_or(true);
    let key = keys::new_write_key();
    let source = app
        .store
        .create_source(NewSource {
            id: keys::new_id("src"),
            name,
            enabled,
            write_key_hash: keys::hash_secret(&key),
            write_key_hint: keys::hint(&key),
        })
        .await?;
    app.config_changed().await?;
    Ok((StatusCode::CREATED, Json(view(&source, Some(&key)))))
}

pub async fn list(State(app): State<Arc<AppState>>) -> ApiResult<Json<Value>> {
    let sources = app.store.list_sources().await?;
    let data: Vec<Value> = sources.iter().map(|s| view(s, None)).collect();
    Ok(Json(json!({ "data": data })))
}

pub async fn get(
    State(app): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    let source = find(&app, &id).await?;
    Ok(Json(view(&source, None)))
}

pub async fn update(
    State(app): State<Arc<AppState>>,
    Path(id): Path<String>,
    JsonObject(body): JsonObject,
) -> ApiResult<Json<Value>> {
    if let Some(k) = body.keys().find(|k| *k != "name" && *k != "enabled") {
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

pub async fn delete(
    State(app): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    if !app.store.delete_source(&id).await? {
        return Err(ApiError::not_found("source"));
    }
    app.config_changed().await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Replaces the write key. The old key stops working at once.
pub async fn rotate_key(
    State(app): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
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
pub async fn events(
    State(app): State<Arc<AppState>>,
    Path(id): Path<String>,
    params: Params,
) -> ApiResult<Json<Value>> {
    find(&app, &id).await?;
    let limit = params.limit(50, 500)?;
    let events = app
        .store
        .recent_events(&id, params.i64("before")?, limit)
        .await?;
    let next_before = (events.len() == limit as usize)
        .then(|| events.last().map(|e| e.seq))
        .flatten();
    let data: Vec<Value> = events
        .into_iter()
        .map(|e| {
            let event: Value = serde_json::from_str(&e.body).unwrap_or(Value::Null);
            json!({
                "seq": e.seq,
                "message_id": e.message_id,
                "type": e.event_type,
                "received_at": e.received_at,
                "blocked": e.blocked.is_some(),
                "blocked_by": e.blocked,
                "event": event,
            })
        })
        .collect();
    Ok(Json(json!({ "data": data, "next_before": next_before })))
}

/// API calls and events received per UTC day, counted at ingest before any
/// filtering: blocked calls count as received, and again under `blocked`
/// (with `blocked_events` by event name). `?from=YYYY-MM-DD&to=YYYY-MM-DD`,
/// default the last 30 days.
pub async fn usage(
    State(app): State<Arc<AppState>>,
    Path(id): Path<String>,
    params: Params,
) -> ApiResult<Json<Value>> {
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
        let day = d["day"].as_str().unwrap_or_default().to_owned();
        let on_day = || blocked.iter().filter(|b| b.day == day);
        let by_event: serde_json::Map<String, Value> = on_day()
            .map(|b| (b.event.clone(), json!(b.count)))
            .collect();
        let total: u64 = on_day().map(|b| b.count).sum();
        d["blocked"] = json!(total);
        d["blocked_events"] = Value::Object(by_event);
    }
    Ok(Json(json!({ "data": data })))
}

pub(crate) async fn find(app: &AppState, id: &str) -> ApiResult<Source> {
    app.store
        .get_source(id)
        .await?
        .ok_or_else(|| ApiError::not_found("source"))
}
