//! The admin API under `/api/v1`, behind `Authorization: Bearer <admin token>`.
//!
//! - [`sources`]: sources, write keys, the debugger view and usage.
//! - [`destinations`]: Webhooks destinations and their connections.
//! - [`deliveries`]: the attempt log and replay.
//! - [`catalog`]: destination types and their settings schema.
//! - [`schema`]: a source's observed schema, its block rules, and
//!   destination filters.
//! - [`webhook_settings`]: validation and masking of Webhooks settings.
//! - [`personas`]: computed traits, audiences and profiles.
//! - [`regulations`]: user deletion and suppression.
//! - [`extract`]: body and query extractors with JSON errors.

pub mod catalog;
pub mod deliveries;
pub mod destinations;
pub mod extract;
pub mod paging;
pub mod personas;
pub mod regulations;
pub mod schema;
pub mod sources;
pub mod webhook_settings;

use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::{Next, from_fn_with_state};
use axum::response::Response;
use sluice_store::keys;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::auth::bearer_token;
use crate::error::ApiError;

/// Every admin route, each from its handler's `#[utoipa::path]` (method
/// and path relative to [`PREFIX`]): this is both the route table and the
/// OpenAPI description ([`crate::openapi`]). To add a route, annotate the
/// handler and add one `.routes(routes!(…))` line: one per path, listing
/// every handler of that path.
pub fn routes() -> OpenApiRouter<Arc<AppState>> {
    OpenApiRouter::new()
        .routes(routes!(sources::create, sources::list))
        .routes(routes!(sources::get, sources::update, sources::delete))
        .routes(routes!(sources::rotate_key))
        .routes(routes!(sources::events))
        .routes(routes!(sources::usage))
        .routes(routes!(schema::list))
        .routes(routes!(schema::get_rules, schema::put_rules))
        .routes(routes!(schema::get_filters, schema::put_filters))
        .routes(routes!(catalog::destinations))
        .routes(routes!(destinations::create, destinations::list))
        .routes(routes!(
            destinations::get,
            destinations::update,
            destinations::delete
        ))
        .routes(routes!(deliveries::list_for_destination))
        .routes(routes!(deliveries::replay_bulk))
        .routes(routes!(deliveries::list))
        .routes(routes!(deliveries::get))
        .routes(routes!(deliveries::replay_one))
        .merge(personas::routes())
        .routes(routes!(regulations::create, regulations::list))
        .routes(routes!(regulations::get))
        .routes(routes!(regulations::suppressions))
        .routes(routes!(crate::openapi::serve))
}

/// The admin API as served: [`routes()`] behind the admin token, with JSON 405s.
pub fn router(app: Arc<AppState>) -> Router<Arc<AppState>> {
    let (routes, _) = routes().split_for_parts();
    routes
        .method_not_allowed_fallback(crate::method_not_allowed)
        .layer(from_fn_with_state(app, require_admin))
}

/// The path prefix the admin API is nested under.
pub const PREFIX: &str = "/api/v1";

async fn require_admin(
    State(app): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    check_token(&app, request.headers())?;
    Ok(next.run(request).await)
}

/// Why a request under [`PREFIX`] is refused before routing, if it is: the
/// admin token is asked for on every path there, so an unknown admin path
/// answers `401` like a known one and does not reveal which routes exist.
/// Checked for every request by [`crate::front`].
pub fn refusal(app: &AppState, request: &Request) -> Option<ApiError> {
    let under = request
        .uri()
        .path()
        .strip_prefix(PREFIX)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'));
    if under {
        check_token(app, request.headers()).err()
    } else {
        None
    }
}

fn check_token(app: &AppState, headers: &axum::http::HeaderMap) -> Result<(), ApiError> {
    let token = bearer_token(headers).ok_or_else(|| {
        ApiError::unauthorized("admin API needs 'Authorization: Bearer <admin token>'")
    })?;
    if !admin_token_matches(app, token) {
        return Err(ApiError::unauthorized("invalid admin token"));
    }
    Ok(())
}

/// Whether `token` is the admin token, compared through its SHA-256 in
/// constant time. The dashboard's sign-in uses the same check.
pub fn admin_token_matches(app: &AppState, token: &str) -> bool {
    keys::verify_secret(token, &app.admin_token_hash)
}
