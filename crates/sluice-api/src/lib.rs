//! Sluice's HTTP surface.
//!
//! Modules:
//! - [`app`]: [`App`], the application as the server calls it: the router,
//!   plus a direct lane for collection calls.
//! - [`ingest`]: the Segment-compatible collection API (`/v1/...`).
//! - [`admin`]: the admin API (`/api/v1/...`).
//! - [`routes`]: the in-memory write key → source → destinations table,
//!   with source rules and destination filters.
//! - [`gate`]: source rules and destination filters applied at ingest.
//! - [`suppression`]: the in-memory set of suppressed user ids.
//! - [`body`]: capped, gzip-aware body reading.
//! - [`budget`]: the memory budget for request bodies.
//! - [`auth`]: write keys and the admin token from headers.
//! - [`principal`]: who calls (admin token, API token, user) and the
//!   [`principal::Actor`] the audit log records.
//! - [`access`]: the role each admin route needs.
//! - [`audit`]: recording changes in the audit log.
//! - [`password`]: argon2id password hashes of dashboard users.
//! - [`metrics`]: Prometheus metrics.
//! - [`health_metrics`]: delivery health per destination on `/metrics`.
//! - [`front`]: the service in front of every route: a credential on the
//!   admin prefix, and the request counter.
//! - [`error`]: [`ApiError`], the stable JSON error shape.
//! - [`path_param`]: path parameters, refused in that shape (`404`) when
//!   they do not parse.
//! - [`openapi`]: the OpenAPI 3.1 document, generated from the same route
//!   table the router serves.

pub mod access;
pub mod admin;
pub mod app;
pub mod audit;
pub mod auth;
pub mod body;
pub mod budget;
pub mod error;
pub mod front;
pub mod gate;
pub mod health_metrics;
pub mod ingest;
pub mod metrics;
pub mod openapi;
pub mod password;
pub mod path_param;
pub mod principal;
pub mod routes;
pub mod suppression;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use prometheus_client::registry::Registry;
use sluice_model::Limits;
use sluice_store::Store;
use tower_http::cors::{AllowOrigin, CorsLayer};

pub use app::App;
pub use budget::BodyBudget;
pub use error::{ApiError, ApiResult};
pub use metrics::Metrics;
pub use routes::RouteTable;

/// A callback the HTTP layer fires; the server wires it to delivery.
pub type Hook = Arc<dyn Fn() + Send + Sync>;

/// Fired after events are committed. The argument says whether deliveries
/// were left for a claim: false when the store handed every one of them
/// to this node's delivery engine as it committed (see
/// `sluice_store::local`), which then needs no wake-up.
pub type CommitHook = Arc<dyn Fn(bool) + Send + Sync>;

/// An open alert incident: a destination failing right now, as this node
/// sees it (docs/alerts.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incident {
    pub destination_id: String,
    pub destination_name: String,
    /// `success_rate`, `delivery_dead` or `backlog`.
    pub reason: String,
    pub since: chrono::DateTime<chrono::Utc>,
}

/// Reads the open incidents (empty when alerts are off).
pub type Incidents = Arc<dyn Fn() -> Vec<Incident> + Send + Sync>;

/// Everything the handlers share.
pub struct AppState {
    pub store: Arc<dyn Store>,
    /// Where ingest appends accepted calls: the store, or the Kafka topic
    /// in the Kafka shape.
    pub log: Arc<dyn sluice_store::EventLog>,
    /// Longest wait for the store on a request's behalf (`storage.timeout_ms`):
    /// an ingest commit, or a whole admin API call.
    pub store_timeout: std::time::Duration,
    pub routes: RouteTable,
    /// Suppressed user ids, checked by ingest (see `docs/privacy.md`).
    pub suppressions: Arc<suppression::Suppressions>,
    pub limits: Limits,
    /// Take the client address from `X-Forwarded-For` (behind a trusted proxy).
    pub trust_forwarded_for: bool,
    /// SHA-256 of the admin token.
    pub admin_token_hash: String,
    /// Who may read `/metrics`, and on which listener.
    pub metrics_access: MetricsAccess,
    /// The memory budget and deadline for request bodies.
    pub bodies: Arc<BodyBudget>,
    /// Fired after events with deliveries are committed: wakes delivery.
    pub on_commit: CommitHook,
    /// Fired after a source or destination changed.
    pub on_config_change: Hook,
    pub metrics: Arc<Metrics>,
    pub registry: Arc<Registry>,
    /// The in-memory schema aggregate; `None` when schema tracking is off.
    pub schema: Option<Arc<sluice_schema::Tracker>>,
    /// False until start-up is complete and again once shutdown begins.
    pub ready: Arc<AtomicBool>,
    /// Which destination URLs may be saved, and how credentials are shown.
    pub outbound: admin::webhook_settings::Rules,
    /// The destinations failing now, for the dashboard's notices.
    pub incidents: Incidents,
    /// This node's delivery health counts: ingest adds the calls
    /// destination filters dropped. `None` when delivery health is off.
    pub tally: Option<Arc<sluice_store::health::Tally>>,
}

/// Access to `/metrics`.
#[derive(Debug, Clone, Default)]
pub struct MetricsAccess {
    /// SHA-256 of the token that `Authorization: Bearer` must carry; `None`
    /// leaves the endpoint open.
    pub token_hash: Option<String>,
    /// Serve `/metrics` on a listener of its own ([`metrics_router`]) rather
    /// than on the main one.
    pub separate_listener: bool,
}

impl AppState {
    /// Makes a configuration change visible to ingest and delivery.
    pub async fn config_changed(&self) -> ApiResult<()> {
        self.routes.reload().await?;
        (self.on_config_change)();
        Ok(())
    }
}

/// Every route of the HTTP API: collection, admin, health, readiness and
/// (unless it has a listener of its own) metrics. The server serves it
/// through [`App`], which takes collection calls past it.
pub fn router(app: Arc<AppState>) -> Router {
    let cors = cors_layer();
    // The 405 fallback sits inside the CORS layer, so that preflight
    // `OPTIONS` requests still reach CORS.
    let (collection, _) = ingest::routes().split_for_parts();
    let collection = collection
        .method_not_allowed_fallback(method_not_allowed)
        .layer(cors);
    let mut main = Router::new()
        .merge(collection)
        .nest(
            "/api/v1",
            admin::router(app.clone()).layer(axum::middleware::from_fn_with_state(
                app.clone(),
                store_deadline,
            )),
        )
        .route("/health", get(|| async { "ok" }))
        .route("/ready", get(ready));
    if !app.metrics_access.separate_listener {
        main = main.route("/metrics", get(metrics_text));
    }
    main.fallback(|| async { ApiError::not_found("route") })
        .method_not_allowed_fallback(|| async {
            ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "method not allowed on this route",
            )
        })
        // Around every route and the fallbacks, so that every path under the
        // admin prefix, known or not, asks for the token first and the route
        // table stays private; it also counts every request.
        .layer(front::FrontLayer::new(app.clone()))
        .with_state(app)
}

/// CORS on the collection routes. Browser clients post cross-origin with
/// text/plain (no preflight) or application/json (preflight); either way
/// any origin may send. [`app::cors_headers`] writes the same headers for
/// the direct lane.
pub fn cors_layer() -> CorsLayer {
    CorsLayer::new()
        .allow_origin(AllowOrigin::mirror_request())
        .allow_methods([Method::GET, Method::POST, Method::OPTIONS])
        .allow_headers([
            header::CONTENT_TYPE,
            header::AUTHORIZATION,
            header::CONTENT_ENCODING,
        ])
        .allow_credentials(true)
        .max_age(Duration::from_secs(24 * 3600))
}

/// `/metrics` alone, for a listener of its own (`metrics.listen`).
pub fn metrics_router(app: Arc<AppState>) -> Router {
    Router::new()
        .route("/metrics", get(metrics_text))
        .fallback(|| async { ApiError::not_found("route") })
        .with_state(app)
}

/// A 405 in the JSON error shape.
pub async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "method not allowed on this route",
    )
}

/// An admin API call answers within `storage.timeout_ms`: the store it
/// waits on hangs (a frozen database) rather than fails, and the caller
/// gets `503 unavailable` instead of waiting with it.
async fn store_deadline(
    State(app): State<Arc<AppState>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    match tokio::time::timeout(app.store_timeout, next.run(request)).await {
        Ok(response) => response,
        Err(_) => ApiError::store_timeout().into_response(),
    }
}

async fn ready(State(app): State<Arc<AppState>>) -> impl IntoResponse {
    if app.ready.load(Ordering::Acquire) {
        (StatusCode::OK, "ready")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "not ready")
    }
}

async fn metrics_text(
    State(app): State<Arc<AppState>>,
    headers: axum::http::HeaderMap,
) -> axum::response::Response {
    if let Some(hash) = &app.metrics_access.token_hash {
        let given = auth::bearer_token(&headers);
        if !given.is_some_and(|t| sluice_store::keys::verify_secret(t, hash)) {
            return ApiError::unauthorized(
                "/metrics needs 'Authorization: Bearer <metrics token>'",
            )
            .into_response();
        }
    }
    let health = match &app.tally {
        Some(_) => match health_metrics::registry(&app).await {
            Ok(r) => Some(r),
            Err(e) => {
                tracing::warn!(error = %e.message, "reading delivery health for /metrics");
                None
            }
        },
        None => None,
    };
    let mut out = String::new();
    use prometheus_client::encoding::text;
    let encoded = text::encode_registry(&mut out, &app.registry)
        .and_then(|()| health.map_or(Ok(()), |h| text::encode_registry(&mut out, &h)))
        .and_then(|()| text::encode_eof(&mut out));
    if let Err(e) = encoded {
        tracing::error!(error = %e, "encoding metrics");
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    }
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
        )],
        out,
    )
        .into_response()
}
