//! Computed traits (`/computed-traits`), audiences (`/audiences`) and
//! profiles (`/profiles/{id}`). The rules live in `sluice-profiles`; these
//! handlers validate, store and render.
//!
//! - [`validate`]: request bodies → checked definitions (400s name the field).
//! - [`computations`]: create (with `preview`), list, get, update, delete,
//!   connect/disconnect destinations, audience members.
//! - [`profiles`]: one person's identities, traits, values and events.
//! - [`routes()`]: the routes of both classes, one named handler each.

pub mod computations;
pub mod profiles;
pub mod routes;
pub mod validate;

use std::sync::Arc;

use utoipa_axum::router::OpenApiRouter;

use crate::AppState;

/// The routes of both classes and the profile lookup.
pub fn routes() -> OpenApiRouter<Arc<AppState>> {
    routes::routes().routes(utoipa_axum::routes!(profiles::get))
}
