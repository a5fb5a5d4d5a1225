//! The admin API under `/api/v1`, behind `Authorization: Bearer <admin token>`.
//!
//! - [`sources`]: sources, write keys, the debugger view and usage.
//! - [`destinations`]: Webhooks destinations and their connections.
//! - [`deliveries`]: the attempt log and replay.
//! - [`catalog`]: destination types and their settings schema.
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

async fn require_admin(
    State(app): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let token = bearer_token(request.headers()).ok_or_else(|| {
        ApiError::unauthorized("admin API needs 'Authorization: Bearer <admin token>'")
    })?;
    if !keys::verify_secret(token, &app.admin_token_hash) {
        return Err(ApiError::unauthorized("invalid admin token"));
    }
    Ok(next.run(request).await)
}
