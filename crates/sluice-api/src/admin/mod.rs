//! The admin API under `/api/v1`, behind `Authorization: Bearer <admin
//! token or API token>`, each route open to the roles [`crate::access`]
//! names.
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
//! - [`team`]: users, their sessions, API tokens, the caller, the audit log.
//! - [`extract`]: body and query extractors with JSON errors.

pub mod catalog;
pub mod deliveries;
pub mod destinations;
pub mod extract;
pub mod health;
pub mod paging;
pub mod personas;
pub mod regulations;
pub mod schema;
pub mod sources;
pub mod team;
pub mod webhook_settings;

use std::sync::Arc;

use axum::Router;
use axum::extract::{MatchedPath, Request, State};
use axum::http::StatusCode;
use axum::middleware::{Next, from_fn_with_state};
use axum::response::Response;
use sluice_store::keys;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::access::required_role;
use crate::error::ApiError;
use crate::principal::{Actor, Principal, Via, authenticate, peer};

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
        .routes(routes!(health::overview))
        .merge(personas::routes())
        .routes(routes!(regulations::create, regulations::list))
        .routes(routes!(regulations::get))
        .routes(routes!(regulations::suppressions))
        .routes(routes!(team::users::create, team::users::list))
        .routes(routes!(
            team::users::get,
            team::users::update,
            team::users::delete
        ))
        .routes(routes!(team::sessions::list, team::sessions::revoke_all))
        .routes(routes!(team::sessions::revoke_one))
        .routes(routes!(team::tokens::create, team::tokens::list))
        .routes(routes!(team::tokens::get, team::tokens::delete))
        .routes(routes!(team::me::get))
        .routes(routes!(team::own_password::change_password))
        .routes(routes!(team::audit::list))
        .routes(routes!(crate::openapi::serve))
}

/// The admin API as served: [`routes()`] behind a credential whose role
/// the route allows, with JSON 405s.
pub fn router(app: Arc<AppState>) -> Router<Arc<AppState>> {
    let (routes, _) = routes().split_for_parts();
    routes
        .method_not_allowed_fallback(crate::method_not_allowed)
        .layer(from_fn_with_state(app, authorize))
}

/// The path prefix the admin API is nested under.
pub const PREFIX: &str = "/api/v1";

/// Refuses a caller whose role the route does not allow (`403
/// forbidden`), before the handler runs; otherwise puts the [`Actor`] on
/// the request. [`crate::front`] has already authenticated the caller.
async fn authorize(
    State(app): State<Arc<AppState>>,
    mut request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let principal = match request.extensions().get::<Principal>() {
        Some(p) => p.clone(),
        None => authenticate(&app, request.headers()).await?,
    };
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_default();
    let needed = required_role(
        request.method(),
        route.strip_prefix(PREFIX).unwrap_or(&route),
    );
    if principal.role() < needed {
        return Err(forbidden(&principal, needed));
    }
    let actor = Actor::of_request(
        principal,
        request.headers(),
        peer(request.extensions()),
        app.trust_forwarded_for,
        Via::Api,
    );
    request.extensions_mut().insert(actor);
    Ok(next.run(request).await)
}

/// The refusal of a call the caller's role does not allow.
pub fn forbidden(principal: &Principal, needed: sluice_store::Role) -> ApiError {
    ApiError::new(
        StatusCode::FORBIDDEN,
        "forbidden",
        format!(
            "this needs the {needed} role; {} has the {} role",
            principal.name(),
            principal.role()
        ),
    )
}

/// Whether `request` is under [`PREFIX`], where every path, known or not,
/// asks for a credential first ([`crate::front`]): an unknown admin path
/// answers `401` like a known one and does not reveal which routes exist.
pub fn is_admin_path(request: &Request) -> bool {
    request
        .uri()
        .path()
        .strip_prefix(PREFIX)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// Whether `token` is the admin token, compared through its SHA-256 in
/// constant time. The dashboard's sign-in uses the same check.
pub fn admin_token_matches(app: &AppState, token: &str) -> bool {
    keys::verify_secret(token, &app.admin_token_hash)
}
