//! Sluice's web dashboard, served by the `sluice` binary at `/`.
//!
//! Server-rendered HTML ([maud]) over the same logic as the admin API: reads
//! go to the store, writes go through the admin API's handlers and
//! validation functions, so the dashboard and `curl` accept and refuse the
//! same things with the same messages. A little JavaScript (copy buttons,
//! the live debugger's short poll, more URL rows) is served as a file; every
//! page works without it.
//!
//! Modules:
//! - [`session`]: signed session cookies and CSRF tokens.
//! - [`access`]: the role each page and form needs.
//! - [`throttle`]: slowing down repeated failed sign-ins (pure).
//! - [`signin_log`]: how many failed sign-ins the audit log records (pure).
//! - [`layout`]: page shell, navigation, security headers, error pages.
//! - [`form`]: capped form bodies.
//! - [`chart`]: inline SVG charts (pure).
//! - [`assets`]: the embedded CSS and JavaScript.
//! - [`widgets`]: markup and form parsing shared by the later pages.
//! - [`pages`]: one module per page.

pub mod access;
pub mod assets;
pub mod chart;
pub mod form;
pub mod layout;
pub mod pages;
pub mod session;
pub mod signin_log;
pub mod throttle;
pub mod widgets;

use std::sync::{Arc, Mutex};

use axum::Router;
use axum::middleware::{from_fn, from_fn_with_state};
use axum::routing::{get, post};
use sluice_api::AppState;

use crate::session::Sessions;

/// What every dashboard handler shares.
pub struct Dash {
    pub app: Arc<AppState>,
    pub sessions: Sessions,
    pub throttle: Mutex<throttle::Throttle>,
    pub signin_log: Mutex<signin_log::SignInLog>,
}

impl Dash {
    /// Runs `f` on the sign-in throttle (a poisoned lock is still usable:
    /// the state is plain counters).
    pub fn throttle<T>(&self, f: impl FnOnce(&mut throttle::Throttle) -> T) -> T {
        let mut t = match self.throttle.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        f(&mut t)
    }

    /// Runs `f` on the count of failed sign-ins the audit log records.
    pub fn signin_log<T>(&self, f: impl FnOnce(&mut signin_log::SignInLog) -> T) -> T {
        let mut l = match self.signin_log.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        f(&mut l)
    }
}

/// The dashboard's routes, to merge next to the API's. It installs no
/// fallback, so unknown paths keep the API's JSON 404.
pub fn router(app: Arc<AppState>) -> Router {
    let dash = Arc::new(Dash {
        sessions: Sessions::new(app.admin_token_hash.clone()),
        throttle: Mutex::default(),
        signin_log: Mutex::default(),
        app,
    });
    use pages::*;
    Router::new()
        .route("/", get(overview::show))
        .route("/signin", get(signin::form).post(signin::submit))
        .route("/signout", post(signin::sign_out))
        .route("/catalog", get(catalog::show))
        .route("/sources", get(sources::list).post(sources::create))
        .route("/sources/{id}", get(sources::show))
        .route("/sources/{id}/rotate-key", post(sources::rotate))
        .route("/sources/{id}/rename", post(lifecycle::rename_source))
        .route("/sources/{id}/enabled", post(lifecycle::switch_source))
        .route("/sources/{id}/delete", post(lifecycle::delete_source))
        .route("/debugger", get(debugger::choose))
        .route("/sources/{id}/debugger", get(debugger::show))
        .route("/sources/{id}/debugger/newer", get(debugger::newer))
        .route("/sources/{id}/schema", get(schema::show))
        .route("/sources/{id}/rules/block", post(schema::block))
        .route("/sources/{id}/rules/plan", post(schema::plan))
        .route("/usage", get(usage::show))
        .route("/delivery-health", get(health::show))
        .route("/destinations", get(destinations::list))
        .route(
            "/destinations/new",
            get(new_destination::form).post(new_destination::submit),
        )
        .route("/destinations/{id}", get(destinations::show))
        .route(
            "/destinations/{id}/edit",
            get(edit_destination::form).post(edit_destination::submit),
        )
        .route("/destinations/{id}/enabled", post(destinations::switch))
        .route(
            "/destinations/{id}/delete",
            post(lifecycle::delete_destination),
        )
        .route("/destinations/{id}/test", post(test_event::send))
        .route("/destinations/{id}/filters", post(filters::add))
        .route("/destinations/{id}/filters/delete", post(filters::delete))
        .route("/destinations/{id}/deliveries", get(deliveries::show))
        .route("/destinations/{id}/replay", post(deliveries::replay_all))
        .route("/deliveries/{id}/replay", post(deliveries::replay_one))
        .nest("/computed-traits", personas::routes(personas::Class::Trait))
        .nest("/audiences", personas::routes(personas::Class::Audience))
        .route("/profiles", get(profiles::show))
        .route(
            "/regulations",
            get(regulations::list).post(regulations::create),
        )
        .route("/regulations/{id}", get(regulations::show))
        .route("/suppressions", get(regulations::suppressions))
        .route("/users", get(team::users::list).post(team::users::create))
        .route("/users/{id}", get(team::user::show))
        .route("/users/{id}/role", post(team::user::role))
        .route("/users/{id}/password", post(team::user::password))
        .route("/users/{id}/sessions/revoke", post(team::user::revoke))
        .route("/users/{id}/delete", post(team::user::delete))
        .route(
            "/tokens",
            get(team::tokens::list).post(team::tokens::create),
        )
        .route("/tokens/{id}/delete", post(team::tokens::delete))
        .route("/audit", get(team::audit::show))
        .route("/account", get(team::account::show))
        .route("/account/password", post(team::account::password))
        .route("/account/sessions/revoke", post(team::account::revoke_all))
        .route("/assets/dashboard.css", get(assets::css))
        .route("/assets/dashboard.js", get(assets::js))
        .layer(from_fn_with_state(dash.clone(), layout::store_deadline))
        .layer(from_fn(layout::security_headers))
        .with_state(dash)
}
