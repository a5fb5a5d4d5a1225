//! Computed traits (`/computed-traits`), audiences (`/audiences`) and
//! profiles (`/profiles/{id}`). The rules live in `sluice-profiles`; these
//! handlers validate, store and render.
//!
//! - [`validate`]: request bodies → checked definitions (400s name the field).
//! - [`computations`]: create (with `preview`), list, get, update, delete,
//!   connect/disconnect destinations, audience members.
//! - [`profiles`]: one person's identities, traits, values and events.

pub mod computations;
pub mod profiles;
pub mod validate;

use std::sync::Arc;

use axum::Router;
use axum::routing::{get, post};
use sluice_profiles::{AUDIENCE, TRAIT};

use crate::AppState;

/// The routes of both classes and the profile lookup.
pub fn router() -> Router<Arc<AppState>> {
    Router::new()
        .nest("/computed-traits", class_routes(TRAIT))
        .nest("/audiences", class_routes(AUDIENCE))
        .route("/profiles/{id}", get(profiles::get))
}

fn class_routes(class: &'static str) -> Router<Arc<AppState>> {
    use computations as c;
    Router::new()
        .route(
            "/",
            post(move |s, b| c::create(s, class, b)).get(move |s| c::list(s, class)),
        )
        .route(
            "/{id}",
            get(move |s, p| c::get(s, class, p))
                .patch(move |s, p, b| c::update(s, class, p, b))
                .delete(move |s, p| c::delete(s, class, p)),
        )
        .route(
            "/{id}/destinations/{destination_id}",
            post(move |s, p| c::connect(s, class, p, true))
                .delete(move |s, p| c::connect(s, class, p, false)),
        )
        .route(
            "/{id}/members",
            get(move |s, p, q| c::members(s, class, p, q)),
        )
}
