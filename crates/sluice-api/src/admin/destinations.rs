//! `/api/v1/destinations`: Webhooks destinations, their connections to
//! sources, and switching them on and off.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sluice_store::{Destination, DestinationPatch, NewDestination, StoreError, keys};
use utoipa::ToSchema;

use super::extract::{JsonObject, Params, known_fields, opt_field, required_name};
use super::paging;
use super::webhook_settings::{self, SettingsInput, SettingsView};
use crate::AppState;
use crate::audit::{After, Target, json_of, record};
use crate::error::{ApiError, ApiResult};
use crate::openapi::schemas::{AfterQuery, ErrorBody, ListPage};
use crate::path_param::PathParam;
use crate::principal::Actor;
use crate::routes::WEBHOOKS;

/// The fields a create or update body may have ([`DestinationInput`]).
pub const FIELDS: &[&str] = &["name", "type", "enabled", "settings", "source_ids"];

/// A destination as the admin API shows it.
#[derive(Debug, Serialize, ToSchema)]
pub struct DestinationView {
    #[schema(example = "dst_qdHXbhTVG8DHLrMy")]
    pub id: String,
    pub name: String,
    /// Always `Webhooks`.
    #[serde(rename = "type")]
    pub kind: String,
    pub enabled: bool,
    pub settings: SettingsView,
    /// Connected sources, sorted.
    pub source_ids: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// The body of `POST /destinations` (`name` required) and of `PATCH
/// /destinations/{id}` (every field optional; `settings` merge by key,
/// `source_ids` replaces the set). Any other field is refused.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DestinationInput {
    /// 1 to 200 characters; required on create.
    pub name: Option<String>,
    /// `Webhooks` (the default); cannot change.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// Default `true` on create.
    pub enabled: Option<bool>,
    pub settings: Option<SettingsInput>,
    /// Ids of existing sources.
    pub source_ids: Option<Vec<String>>,
}

pub fn view(d: &Destination, masker: &sluice_outbound::Masker) -> DestinationView {
    DestinationView {
        id: d.id.clone(),
        name: d.name.clone(),
        kind: d.kind.clone(),
        enabled: d.enabled,
        settings: webhook_settings::view(&d.settings, masker),
        source_ids: d.source_ids.clone(),
        created_at: d.created_at,
        updated_at: d.updated_at,
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
#[utoipa::path(post, path = "/destinations", tag = "destinations", request_body = DestinationInput,
    responses(
        (status = 201, description = "Created; a generated Standard Webhooks secret is shown in full in this answer only", body = DestinationView),
        (status = 400, description = "`invalid_json`, `body_too_large`, `invalid_field` naming the field", body = ErrorBody),
    ))]
pub async fn create(
    State(app): State<Arc<AppState>>,
    actor: Actor,
    JsonObject(body): JsonObject,
) -> ApiResult<(StatusCode, Json<DestinationView>)> {
    known_fields(&body, FIELDS)?;
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
    let target = Target::new(RESOURCE, "create", Some(&new.id));
    let change = async {
        let dest = app
            .store
            .create_destination(new)
            .await
            .map_err(unknown_source)?;
        app.config_changed().await?;
        Ok(dest)
    };
    let dest = record(&app, &actor, target, None, change, |d| after(&app, d)).await?;
    let mut shown = view(&dest, &app.outbound.masker);
    reveal_generated(&mut shown, &body, &dest);
    Ok((StatusCode::CREATED, Json(shown)))
}

#[utoipa::path(get, path = "/destinations", tag = "destinations", params(AfterQuery),
    responses(
        (status = 200, description = "A page of the destinations, oldest first", body = ListPage<DestinationView>),
        (status = 400, description = "`invalid_query`", body = ErrorBody),
    ))]
pub async fn list(
    State(app): State<Arc<AppState>>,
    params: Params,
) -> ApiResult<Json<ListPage<DestinationView>>> {
    let all = app.store.list_destinations().await?;
    let view = |d: &Destination| view(d, &app.outbound.masker);
    Ok(Json(paging::page_of(
        all,
        |d| d.id.as_str(),
        view,
        &params,
    )?))
}

#[utoipa::path(get, path = "/destinations/{id}", tag = "destinations", params(("id" = String, Path)),
    responses(
        (status = 200, body = DestinationView),
        (status = 404, description = "`not_found`", body = ErrorBody),
    ))]
pub async fn get(
    State(app): State<Arc<AppState>>,
    PathParam(id): PathParam<String>,
) -> ApiResult<Json<DestinationView>> {
    Ok(Json(view(&find(&app, &id).await?, &app.outbound.masker)))
}

/// Updates a destination. `settings` keys that are omitted keep their value;
/// `source_ids` replaces the whole set of connections.
#[utoipa::path(patch, path = "/destinations/{id}", tag = "destinations", params(("id" = String, Path)),
    request_body = DestinationInput,
    responses(
        (status = 200, body = DestinationView),
        (status = 400, description = "`invalid_json`, `invalid_field` naming the field", body = ErrorBody),
        (status = 404, description = "`not_found`", body = ErrorBody),
    ))]
pub async fn update(
    State(app): State<Arc<AppState>>,
    actor: Actor,
    PathParam(id): PathParam<String>,
    JsonObject(body): JsonObject,
) -> ApiResult<Json<DestinationView>> {
    known_fields(&body, FIELDS)?;
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
    let target = Target::new(RESOURCE, "update", Some(&id));
    let before = json_of(&view(&current, &app.outbound.masker));
    let change = async {
        let dest = app
            .store
            .update_destination(&id, patch)
            .await
            .map_err(unknown_source)?
            .ok_or_else(|| ApiError::not_found("destination"))?;
        app.config_changed().await?;
        Ok(dest)
    };
    let dest = record(&app, &actor, target, before, change, |d| after(&app, d)).await?;
    let mut shown = view(&dest, &app.outbound.masker);
    reveal_generated(&mut shown, &body, &dest);
    Ok(Json(shown))
}

/// Shows a Standard Webhooks secret in full in the response to the request
/// that generated it: the only time it is ever returned.
fn reveal_generated(shown: &mut DestinationView, body: &Map<String, Value>, dest: &Destination) {
    let asked = body
        .get("settings")
        .is_some_and(webhook_settings::extras::asked_to_generate);
    if let (true, Some(standard), Some(target)) = (
        asked,
        &dest.settings.standard_webhooks,
        shown.settings.standard_webhooks.as_mut(),
    ) {
        target.secret = standard.secret.clone();
    }
}

#[utoipa::path(delete, path = "/destinations/{id}", tag = "destinations", params(("id" = String, Path)),
    responses(
        (status = 204, description = "Deleted; its pending deliveries are discarded"),
        (status = 404, description = "`not_found`", body = ErrorBody),
    ))]
pub async fn delete(
    State(app): State<Arc<AppState>>,
    actor: Actor,
    PathParam(id): PathParam<String>,
) -> ApiResult<StatusCode> {
    let before = app.store.get_destination(&id).await?;
    let before = before.and_then(|d| json_of(&view(&d, &app.outbound.masker)));
    let target = Target::new(RESOURCE, "delete", Some(&id));
    let change = async {
        if !app.store.delete_destination(&id).await? {
            return Err(ApiError::not_found("destination"));
        }
        app.config_changed().await?;
        Ok(StatusCode::NO_CONTENT)
    };
    record(&app, &actor, target, before, change, After::nothing).await
}

/// The audit log's name for a destination.
const RESOURCE: &str = "destination";

/// A destination as the audit log keeps it: as the API shows it, masked
/// (never with a generated secret revealed).
fn after(app: &AppState, d: &Destination) -> After {
    After::state(json_of(&view(d, &app.outbound.masker)))
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
