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
use axum::routing::{get, post};
use sluice_store::keys;

use crate::AppState;
use crate::auth::bearer_token;
use crate::error::ApiError;

pub fn router(app: Arc<AppState>) -> Router<Arc<AppState>> {
    Router::new()
        .route("/sources", post(sources::create).get(sources::list))
        .route(
            "/sources/{id}",
            get(sources::get)
                .patch(sources::update)
                .delete(sources::delete),
        )
        .route("/sources/{id}/rotate-key", post(sources::rotate_key))
        .route("/sources/{id}/events", get(sources::events))
        .route("/sources/{id}/usage", get(sources::usage))
        .route("/sources/{id}/schema", get(schema::list))
        .route(
            "/sources/{id}/rules",
            get(schema::get_rules).put(schema::put_rules),
        )
        .route(
            "/destinations/{id}/filters",
            get(schema::get_filters).put(schema::put_filters),
        )
        .route("/catalog/destinations", get(catalog::destinations))
        .route(
            "/destinations",
            post(destinations::create).get(destinations::list),
        )
        .route(
            "/destinations/{id}",
            get(destinations::get)
                .patch(destinations::update)
                .delete(destinations::delete),
        )
        .route(
            "/destinations/{id}/deliveries",
            get(deliveries::list_for_destination),
        )
        .route("/destinations/{id}/replay", post(deliveries::replay_bulk))
        .route("/deliveries", get(deliveries::list))
        .route("/deliveries/{id}", get(deliveries::get))
        .route("/deliveries/{id}/replay", post(deliveries::replay_one))
        .merge(personas::router())
        .route(
            "/regulations",
            post(regulations::create).get(regulations::list),
        )
        .route("/regulations/{id}", get(regulations::get))
        .route("/suppressions", get(regulations::suppressions))
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

/// Asks for the admin token on every path under [`PREFIX`] before routing,
/// so that an unknown admin path answers `401` like a known one and does not
/// reveal which routes exist. Installed around the whole application.
pub async fn guard_prefix(
    State(app): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let path = request.uri().path();
    let under = path
        .strip_prefix(PREFIX)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'));
    if under {
        check_token(&app, request.headers())?;
    }
    Ok(next.run(request).await)
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
