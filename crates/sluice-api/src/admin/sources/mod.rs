//! `/api/v1/sources`: create, list, get, update, delete, rotate the write key;
//! the debugger (recent events) and usage views are in `reads.rs`.

mod reads;
pub use reads::*;

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sluice_store::{NewSource, Source, SourcePatch, keys};
use utoipa::ToSchema;

use super::extract::{JsonObject, Params, known_fields, opt_field, required_name};
use super::paging;
use crate::AppState;
use crate::audit::{After, Target, json_of, record};
use crate::error::{ApiError, ApiResult};
use crate::openapi::schemas::{AfterQuery, ErrorBody, ListPage};
use crate::path_param::PathParam;
use crate::principal::Actor;

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
    actor: Actor,
    JsonObject(body): JsonObject,
) -> ApiResult<(StatusCode, Json<SourceView>)> {
    create_as(&app, &actor, keys::new_id("src"), &body).await
}

/// Creates a source under the id `id`. The dashboard names a source after
/// the form that creates it, so that the form sent twice (a reload of the
/// page that answered it) finds the source the first sending made, as a
/// `409 conflict`, on whichever node it reaches, instead of making a second.
pub async fn create_as(
    app: &AppState,
    actor: &Actor,
    id: String,
    body: &Map<String, Value>,
) -> ApiResult<(StatusCode, Json<SourceView>)> {
    known_fields(body, CREATE_FIELDS)?;
    let name = required_name(body, "name")?;
    let enabled = opt_field(body, "enabled", Value::as_bool, "a boolean")?.unwrap_or(true);
    let key = keys::new_write_key();
    let target = Target::new(RESOURCE, "create", Some(&id));
    let change = async {
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
        Ok(source)
    };
    let source = record(app, actor, target, None, change, |s| {
        After::state(json_of(&view(s, None)))
    })
    .await?;
    Ok((StatusCode::CREATED, Json(view(&source, Some(&key)))))
}

/// The audit log's name for a source.
const RESOURCE: &str = "source";

/// A source change recorded in the audit log: `before` is the source as
/// it was, the change answers the source as it is after.
async fn audited(
    app: &AppState,
    actor: &Actor,
    id: &str,
    action: &'static str,
    change: impl std::future::Future<Output = ApiResult<Source>>,
) -> ApiResult<Source> {
    let before = app.store.get_source(id).await?;
    let before = before.map(|s| view(&s, None));
    let target = Target::new(RESOURCE, action, Some(id));
    record(
        app,
        actor,
        target,
        before.as_ref().and_then(json_of),
        change,
        |s| After::state(json_of(&view(s, None))),
    )
    .await
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
    let view = |s: &Source| view(s, None);
    Ok(Json(paging::page_of(
        all,
        |s| s.id.as_str(),
        view,
        &params,
    )?))
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
    actor: Actor,
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
    let change = async {
        let source = app
            .store
            .update_source(&id, patch)
            .await?
            .ok_or_else(|| ApiError::not_found("source"))?;
        app.config_changed().await?;
        Ok(source)
    };
    let source = audited(&app, &actor, &id, "update", change).await?;
    Ok(Json(view(&source, None)))
}

#[utoipa::path(delete, path = "/sources/{id}", tag = "sources", params(("id" = String, Path)),
    responses(
        (status = 204, description = "Deleted; its write key stops working"),
        (status = 404, description = "`not_found`", body = ErrorBody),
    ))]
pub async fn delete(
    State(app): State<Arc<AppState>>,
    actor: Actor,
    PathParam(id): PathParam<String>,
) -> ApiResult<StatusCode> {
    let before = app.store.get_source(&id).await?;
    let before = before.map(|s| view(&s, None));
    let target = Target::new(RESOURCE, "delete", Some(&id));
    let change = async {
        if !app.store.delete_source(&id).await? {
            return Err(ApiError::not_found("source"));
        }
        app.config_changed().await?;
        Ok(StatusCode::NO_CONTENT)
    };
    record(
        &app,
        &actor,
        target,
        before.as_ref().and_then(json_of),
        change,
        After::nothing,
    )
    .await
}

/// Replaces the write key. The old key stops working at once.
#[utoipa::path(post, path = "/sources/{id}/rotate-key", tag = "sources", params(("id" = String, Path)),
    responses(
        (status = 200, description = "The source with its new `write_key`, shown this once", body = SourceView),
        (status = 404, description = "`not_found`", body = ErrorBody),
    ))]
pub async fn rotate_key(
    State(app): State<Arc<AppState>>,
    actor: Actor,
    PathParam(id): PathParam<String>,
) -> ApiResult<Json<SourceView>> {
    let key = keys::new_write_key();
    let patch = SourcePatch {
        write_key: Some((keys::hash_secret(&key), keys::hint(&key))),
        ..SourcePatch::default()
    };
    let change = async {
        let source = app
            .store
            .update_source(&id, patch)
            .await?
            .ok_or_else(|| ApiError::not_found("source"))?;
        app.config_changed().await?;
        Ok(source)
    };
    let source = audited(&app, &actor, &id, "rotate-key", change).await?;
    Ok(Json(view(&source, Some(&key))))
}

pub(crate) async fn find(app: &AppState, id: &str) -> ApiResult<Source> {
    app.store
        .get_source(id)
        .await?
        .ok_or_else(|| ApiError::not_found("source"))
}
