//! `/api/v1/destinations`: Webhooks destinations, their connections to
//! sources, and switching them on and off.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde_json::{Map, Value, json};
use sluice_store::{Destination, DestinationPatch, NewDestination, StoreError, keys};

use super::extract::{JsonObject, opt_field, required_name};
use super::webhook_settings;
use crate::AppState;
use crate::error::{ApiError, ApiResult};
use crate::routes::WEBHOOKS;

const FIELDS: &[&str] = &["name", "type", "enabled", "settings", "source_ids"];

pub fn view(d: &Destination, masker: &sluice_outbound::Masker) -> Value {
    json!({
        "id": d.id,
        "name": d.name,
        "type": d.kind,
        "enabled": d.enabled,
        "settings": webhook_settings::view(&d.settings, masker),
        "source_ids": d.source_ids,
        "created_at": d.created_at,
        "updated_at": d.updated_at,
    })
}

fn check_fields(body: &Map<String, Value>) -> ApiResult<()> {
    match body.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        Some(k) => Err(ApiError::invalid(k, "is not a known field")),
        None => Ok(()),
    }
}

fn source_ids(body: &Map<String, Value>) -> ApiResult<Option<Vec<String>>> {
    let Some(v) = body.get("source_ids") else {
        return Ok(None);
    };
    let items = v
        .as_array()
        .ok_or_else(|| ApiError::invalid("source_ids", "must be an array of source ids"))?;
    let mut ids = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let id = item
            .as_str()
            .ok_or_else(|| ApiError::invalid(&format!("source_ids[{i}]"), "must be a string"))?;
        ids.push(id.to_owned());
    }
    ids.sort();
    ids.dedup();
    Ok(Some(ids))
}

/// Creates a destination. `type` must be `Webhooks` (the only catalog entry);
/// `enabled` defaults to true, so a destination created with URLs starts
/// receiving at once.
pub async fn create(
    State(app): State<Arc<AppState>>,
    JsonObject(body): JsonObject,
) -> ApiResult<(StatusCode, Json<Value>)> {
    check_fields(&body)?;
    let name = required_name(&body, "name")?;
    let kind = opt_field(&body, "type", Value::as_str, "a string")?.unwrap_or(WEBHOOKS);
    if kind != WEBHOOKS {
        return Err(ApiError::invalid(
            "type",
            format!("unknown destination type '{kind}'; see /api/v1/catalog/destinations"),
        ));
    }
    let settings = match body.get("settings") {
        Some(v) => webhook_settings::parse(v, None, &app.outbound)?,
        None => Default::default(),
    };
    let new = NewDestination {
        id: keys::new_id("dst"),
        name,
        kind: WEBHOOKS.to_owned(),
        enabled: opt_field(&body, "enabled", Value::as_bool, "a boolean")?.unwrap_or(true),
        settings,
        source_ids: source_ids(&body)?.unwrap_or_default(),
    };
    let dest = app
        .store
        .create_destination(new)
        .await
        .map_err(unknown_source)?;
    app.config_changed().await?;
    let mut shown = view(&dest, &app.outbound.masker);
    reveal_generated(&mut shown, &body, &dest);
    Ok((StatusCode::CREATED, Json(shown)))
}

pub async fn list(State(app): State<Arc<AppState>>) -> ApiResult<Json<Value>> {
    let all = app.store.list_destinations().await?;
    let data: Vec<Value> = all.iter().map(|d| view(d, &app.outbound.masker)).collect();
    Ok(Json(json!({ "data": data })))
}

pub async fn get(
    State(app): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> ApiResult<Json<Value>> {
    Ok(Json(view(&find(&app, &id).await?, &app.outbound.masker)))
}

/// Updates a destination. `settings` keys that are omitted keep their value;
/// `source_ids` replaces the whole set of connections.
pub async fn update(
    State(app): State<Arc<AppState>>,
    Path(id): Path<String>,
    JsonObject(body): JsonObject,
) -> ApiResult<Json<Value>> {
    check_fields(&body)?;
    if body
        .get("type")
        .is_some_and(|t| t.as_str() != Some(WEBHOOKS))
    {
        return Err(ApiError::invalid("type", "cannot be changed"));
    }
    let current = find(&app, &id).await?;
    let name = match body.get("name") {
        None => None,
        Some(_) => Some(required_name(&body, "name")?),
    };
    let settings = match body.get("settings") {
        None => None,
        Some(v) => Some(webhook_settings::parse(
            v,
            Some(&current.settings),
            &app.outbound,
        )?),
    };
    let patch = DestinationPatch {
        name,
        enabled: opt_field(&body, "enabled", Value::as_bool, "a boolean")?,
        settings,
        source_ids: source_ids(&body)?,
    };
    let dest = app
        .store
        .update_destination(&id, patch)
        .await
        .map_err(unknown_source)?
        .ok_or_else(|| ApiError::not_found("destination"))?;
    app.config_changed().await?;
    let mut shown = view(&dest, &app.outbound.masker);
    reveal_generated(&mut shown, &body, &dest);
    Ok(Json(shown))
}

/// Shows a Standard Webhooks secret in full in the response to the request
/// that generated it: the only time it is ever returned.
fn reveal_generated(shown: &mut Value, body: &Map<String, Value>, dest: &Destination) {
    let asked = body
        .get("settings")
        .is_some_and(webhook_settings::extras::asked_to_generate);
    if let (true, Some(standard)) = (asked, &dest.settings.standard_webhooks)
        && let Some(target) = shown.pointer_mut("/settings/standardWebhooks/secret")
    {
        *target = Value::String(standard.secret.clone());
    }
}

pub async fn delete(
    State(app): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    if !app.store.delete_destination(&id).await? {
        return Err(ApiError::not_found("destination"));
    }
    app.config_changed().await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The store reports a connection to a missing source as not found; to the
/// client that is an invalid `source_ids` entry.
fn unknown_source(e: StoreError) -> ApiError {
    match e {
        StoreError::NotFound(what) => {
            ApiError::invalid("source_ids", format!("{what} does not exist"))
        }
        other => other.into(),
    }
}

pub(crate) async fn find(app: &AppState, id: &str) -> ApiResult<Destination> {
    app.store
        .get_destination(id)
        .await?
        .ok_or_else(|| ApiError::not_found("destination"))
}
