//! The computed-trait and audience routes with their OpenAPI descriptions:
//! one named handler per class and operation (the `routes!` macro and the
//! `#[utoipa::path]` attribute need a function and a literal path), each
//! calling the shared handler in [`super::computations`] with its class.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::Value;
use sluice_profiles::{AUDIENCE, TRAIT};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::computations as c;
use crate::AppState;
use crate::admin::extract::{JsonObject, Params};
use crate::error::ApiResult;
use crate::openapi::schemas::ErrorBody;
use crate::path_param::PathParam;
use crate::principal::Actor;

/// Both classes' routes.
pub fn routes() -> OpenApiRouter<Arc<AppState>> {
    OpenApiRouter::new()
        .routes(routes!(create_trait, list_trait))
        .routes(routes!(get_trait, update_trait, delete_trait))
        .routes(routes!(connect_trait, disconnect_trait))
        .routes(routes!(members_trait))
        .routes(routes!(create_audience, list_audience))
        .routes(routes!(get_audience, update_audience, delete_audience))
        .routes(routes!(connect_audience, disconnect_audience))
        .routes(routes!(members_audience))
}

#[utoipa::path(post, path = "/computed-traits", tag = "personas",
    request_body(content = Object, description = "`name`, `key`?, `definition`, `destination_ids`?, `preview`? (docs/personas.md)"),
    responses(
        (status = 201, description = "The computed trait with its `status`", body = Object),
        (status = 200, description = "With `\"preview\": true`: `{preview: {count, profiles_scanned, sample}}`, nothing stored", body = Object),
        (status = 400, description = "`invalid_json`, `invalid_field` naming the field", body = ErrorBody),
    ))]
pub async fn create_trait(
    app: State<Arc<AppState>>,
    actor: Actor,
    body: JsonObject,
) -> ApiResult<Response> {
    c::create(app, actor, TRAIT, body).await
}

#[utoipa::path(get, path = "/computed-traits", tag = "personas",
    params(
        ("after" = Option<String>, Query, description = "The previous page's `next_after`"),
        ("limit" = Option<u32>, Query, description = "1 to 1000, default 100"),
    ),
    responses(
        (status = 200, description = "`{data: [computed trait], next_after, total}`, oldest first; `next_after` is null after the last page", body = Object),
        (status = 400, description = "`invalid_query`", body = ErrorBody),
    ))]
pub async fn list_trait(app: State<Arc<AppState>>, params: Params) -> ApiResult<Json<Value>> {
    c::list(app, TRAIT, params).await
}

#[utoipa::path(get, path = "/computed-traits/{id}", tag = "personas", params(("id" = String, Path)),
    responses(
        (status = 200, description = "The computed trait with its `status`", body = Object),
        (status = 404, description = "`not_found`", body = ErrorBody),
    ))]
pub async fn get_trait(app: State<Arc<AppState>>, id: PathParam<String>) -> ApiResult<Json<Value>> {
    c::get(app, TRAIT, id).await
}

#[utoipa::path(patch, path = "/computed-traits/{id}", tag = "personas", params(("id" = String, Path)),
    request_body(content = Object, description = "Any of `name`, `definition`, `destination_ids`"),
    responses(
        (status = 200, description = "The computed trait", body = Object),
        (status = 400, description = "`invalid_json`, `invalid_field`", body = ErrorBody),
        (status = 404, description = "`not_found`", body = ErrorBody),
    ))]
pub async fn update_trait(
    app: State<Arc<AppState>>,
    actor: Actor,
    id: PathParam<String>,
    body: JsonObject,
) -> ApiResult<Json<Value>> {
    c::update(app, actor, TRAIT, id, body).await
}

#[utoipa::path(delete, path = "/computed-traits/{id}", tag = "personas", params(("id" = String, Path)),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "`not_found`", body = ErrorBody),
    ))]
pub async fn delete_trait(
    app: State<Arc<AppState>>,
    actor: Actor,
    id: PathParam<String>,
) -> ApiResult<StatusCode> {
    c::delete(app, actor, TRAIT, id).await
}

#[utoipa::path(post, path = "/computed-traits/{id}/destinations/{destination_id}", tag = "personas",
    params(("id" = String, Path), ("destination_id" = String, Path)),
    responses(
        (status = 200, description = "The computed trait, connected", body = Object),
        (status = 400, description = "`invalid_field`: unknown destination", body = ErrorBody),
        (status = 404, description = "`not_found`", body = ErrorBody),
    ))]
pub async fn connect_trait(
    app: State<Arc<AppState>>,
    actor: Actor,
    ids: PathParam<(String, String)>,
) -> ApiResult<Json<Value>> {
    c::connect(app, actor, TRAIT, ids, true).await
}

#[utoipa::path(delete, path = "/computed-traits/{id}/destinations/{destination_id}", tag = "personas",
    params(("id" = String, Path), ("destination_id" = String, Path)),
    responses(
        (status = 200, description = "The computed trait, disconnected", body = Object),
        (status = 404, description = "`not_found`", body = ErrorBody),
    ))]
pub async fn disconnect_trait(
    app: State<Arc<AppState>>,
    actor: Actor,
    ids: PathParam<(String, String)>,
) -> ApiResult<Json<Value>> {
    c::connect(app, actor, TRAIT, ids, false).await
}

#[utoipa::path(get, path = "/computed-traits/{id}/members", tag = "personas",
    params(
        ("id" = String, Path),
        ("after" = Option<String>, Query, description = "The previous page's `next_after`"),
        ("limit" = Option<u32>, Query, description = "1 to 1000, default 100"),
    ),
    responses(
        (status = 200, description = "`{data: [{profile_id, user_id, value}], next_after}`", body = Object),
        (status = 400, description = "`invalid_query`", body = ErrorBody),
        (status = 404, description = "`not_found`", body = ErrorBody),
    ))]
pub async fn members_trait(
    app: State<Arc<AppState>>,
    id: PathParam<String>,
    params: Params,
) -> ApiResult<Json<Value>> {
    c::members(app, TRAIT, id, params).await
}

#[utoipa::path(post, path = "/audiences", tag = "personas",
    request_body(content = Object, description = "`name`, `key`?, `definition`, `destination_ids`?, `preview`? (docs/personas.md)"),
    responses(
        (status = 201, description = "The audience with its `status`", body = Object),
        (status = 200, description = "With `\"preview\": true`: `{preview: {count, profiles_scanned, sample}}`, nothing stored", body = Object),
        (status = 400, description = "`invalid_json`, `invalid_field` naming the field", body = ErrorBody),
    ))]
pub async fn create_audience(
    app: State<Arc<AppState>>,
    actor: Actor,
    body: JsonObject,
) -> ApiResult<Response> {
    c::create(app, actor, AUDIENCE, body).await
}

#[utoipa::path(get, path = "/audiences", tag = "personas",
    params(
        ("after" = Option<String>, Query, description = "The previous page's `next_after`"),
        ("limit" = Option<u32>, Query, description = "1 to 1000, default 100"),
    ),
    responses(
        (status = 200, description = "`{data: [audience], next_after, total}`, oldest first; `next_after` is null after the last page", body = Object),
        (status = 400, description = "`invalid_query`", body = ErrorBody),
    ))]
pub async fn list_audience(app: State<Arc<AppState>>, params: Params) -> ApiResult<Json<Value>> {
    c::list(app, AUDIENCE, params).await
}

#[utoipa::path(get, path = "/audiences/{id}", tag = "personas", params(("id" = String, Path)),
    responses(
        (status = 200, description = "The audience with its `status`", body = Object),
        (status = 404, description = "`not_found`", body = ErrorBody),
    ))]
pub async fn get_audience(
    app: State<Arc<AppState>>,
    id: PathParam<String>,
) -> ApiResult<Json<Value>> {
    c::get(app, AUDIENCE, id).await
}

#[utoipa::path(patch, path = "/audiences/{id}", tag = "personas", params(("id" = String, Path)),
    request_body(content = Object, description = "Any of `name`, `definition`, `destination_ids`"),
    responses(
        (status = 200, description = "The audience", body = Object),
        (status = 400, description = "`invalid_json`, `invalid_field`", body = ErrorBody),
        (status = 404, description = "`not_found`", body = ErrorBody),
    ))]
pub async fn update_audience(
    app: State<Arc<AppState>>,
    actor: Actor,
    id: PathParam<String>,
    body: JsonObject,
) -> ApiResult<Json<Value>> {
    c::update(app, actor, AUDIENCE, id, body).await
}

#[utoipa::path(delete, path = "/audiences/{id}", tag = "personas", params(("id" = String, Path)),
    responses(
        (status = 204, description = "Deleted"),
        (status = 404, description = "`not_found`", body = ErrorBody),
    ))]
pub async fn delete_audience(
    app: State<Arc<AppState>>,
    actor: Actor,
    id: PathParam<String>,
) -> ApiResult<StatusCode> {
    c::delete(app, actor, AUDIENCE, id).await
}

#[utoipa::path(post, path = "/audiences/{id}/destinations/{destination_id}", tag = "personas",
    params(("id" = String, Path), ("destination_id" = String, Path)),
    responses(
        (status = 200, description = "The audience, connected", body = Object),
        (status = 400, description = "`invalid_field`: unknown destination", body = ErrorBody),
        (status = 404, description = "`not_found`", body = ErrorBody),
    ))]
pub async fn connect_audience(
    app: State<Arc<AppState>>,
    actor: Actor,
    ids: PathParam<(String, String)>,
) -> ApiResult<Json<Value>> {
    c::connect(app, actor, AUDIENCE, ids, true).await
}

#[utoipa::path(delete, path = "/audiences/{id}/destinations/{destination_id}", tag = "personas",
    params(("id" = String, Path), ("destination_id" = String, Path)),
    responses(
        (status = 200, description = "The audience, disconnected", body = Object),
        (status = 404, description = "`not_found`", body = ErrorBody),
    ))]
pub async fn disconnect_audience(
    app: State<Arc<AppState>>,
    actor: Actor,
    ids: PathParam<(String, String)>,
) -> ApiResult<Json<Value>> {
    c::connect(app, actor, AUDIENCE, ids, false).await
}

#[utoipa::path(get, path = "/audiences/{id}/members", tag = "personas",
    params(
        ("id" = String, Path),
        ("after" = Option<String>, Query, description = "The previous page's `next_after`"),
        ("limit" = Option<u32>, Query, description = "1 to 1000, default 100"),
    ),
    responses(
        (status = 200, description = "`{data: [{profile_id, user_id, value}], next_after}`", body = Object),
        (status = 400, description = "`invalid_query`", body = ErrorBody),
        (status = 404, description = "`not_found`", body = ErrorBody),
    ))]
pub async fn members_audience(
    app: State<Arc<AppState>>,
    id: PathParam<String>,
    params: Params,
) -> ApiResult<Json<Value>> {
    c::members(app, AUDIENCE, id, params).await
}
