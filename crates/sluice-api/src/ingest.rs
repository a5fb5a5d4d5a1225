//! The Segment-compatible collection API.
//!
//! `POST /v1/{kind}` where kind is a call type, `batch`, `import`, or the
//! browser library's one-letter forms. Order of work, cheapest refusal first:
//! path → capped body read (gzip aware) → write key from HTTP Basic → parse and
//! validate the whole request → write key from the body → drop calls of
//! suppressed users (in memory, see [`crate::suppression`]) → route, with
//! source rules and destination filters ([`crate::gate`]) → commit → wake
//! delivery → record the schema (in memory) → `200 {"success":true}`.
//! Nothing is stored unless every item is valid, and the 200 is sent only
//! after the commit. A call blocked by a rule is committed (marked) and
//! answered 200 like any other, so clients do not retry it; a suppressed
//! call is answered 200 and neither stored nor delivered.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Instant;

use axum::Json;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderValue};
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde_json::json;
use sluice_model::{Endpoint, Envelope, Extras, RequestContext, parse_request_with};
use sluice_schema::Shape;
use sluice_store::AppendRequest;

use crate::AppState;
use crate::auth::basic_write_key;
use crate::body::read_capped;
use crate::error::{ApiError, ApiResult};
use crate::gate;
use crate::path_param::PathParam;
use crate::routes::SourceRoute;

/// The collection routes, each from its handler's `#[utoipa::path]`.
pub fn routes() -> utoipa_axum::router::OpenApiRouter<Arc<AppState>> {
    use utoipa_axum::routes;
    utoipa_axum::router::OpenApiRouter::new()
        .routes(routes!(collect))
        .routes(routes!(collect_with_slash))
        .routes(routes!(project_settings))
}

/// The last path segment of a collection call: a call type, `batch`, the
/// legacy `import`, or the browser library's one-letter forms.
#[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Track,
    Identify,
    Page,
    Screen,
    Group,
    Alias,
    Batch,
    Import,
    T,
    I,
    P,
    S,
    G,
    A,
    B,
}

/// A Segment call (`/v1/track`, `/v1/identify`, …) or a batch
/// (`/v1/batch`, `/v1/import`: `{"batch": [call, …]}`, each call with its
/// `type`). The fields are Segment's (docs/collection-api.md); unknown
/// fields are kept.
#[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
#[allow(non_snake_case, dead_code)]
pub struct Call {
    /// In a batch item: the call type.
    #[serde(rename = "type")]
    kind: Option<String>,
    /// One of `userId` and `anonymousId` is required (except in `alias`).
    userId: Option<String>,
    anonymousId: Option<String>,
    /// `track`: the event name (required).
    event: Option<String>,
    /// `track`, `page`, `screen`.
    #[schema(value_type = Option<Object>)]
    properties: Option<serde_json::Value>,
    /// `identify`, `group`.
    #[schema(value_type = Option<Object>)]
    traits: Option<serde_json::Value>,
    /// `group`: required.
    groupId: Option<String>,
    /// `alias`: required.
    previousId: Option<String>,
    /// `page`, `screen`.
    name: Option<String>,
    #[schema(value_type = Option<Object>)]
    context: Option<serde_json::Value>,
    /// `{"All": bool, "<Destination>": bool | object}`.
    #[schema(value_type = Option<Object>)]
    integrations: Option<serde_json::Value>,
    /// Made by Sluice when absent.
    messageId: Option<String>,
    /// ISO 8601; kept as sent when `sentAt` is absent.
    timestamp: Option<String>,
    sentAt: Option<String>,
    /// The write key, for clients that send it in the body instead of Basic auth.
    writeKey: Option<String>,
    /// A batch's calls (`/v1/batch`, `/v1/import`): at most 2500.
    #[schema(no_recursion)]
    batch: Option<Vec<Call>>,
}

/// `{"success": true}`: every call was committed.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct Accepted {
    #[schema(value_type = bool, example = true)]
    success: bool,
}

/// Handles one collection request.
#[utoipa::path(post, path = "/v1/{kind}", tag = "collection",
    params(("kind" = inline(Kind), Path, description = "The call type, `batch` or `import`")),
    request_body(content = Call, description = "JSON, optionally gzip (`Content-Encoding: gzip`); the Content-Type is not checked. At most 32 KiB per call and 500 KiB per batch (docs/collection-api.md)"),
    security(("writeKey" = []), ()),
    responses(
        (status = 200, description = "Committed (or dropped by a rule or a suppression, still answered 200)", body = Accepted),
        (status = 400, description = "Rejected whole: `invalid_json`, `missing_field`, `body_too_large`, … (`batch[i]: …` names the item)", body = crate::openapi::ErrorBody),
        (status = 404, description = "`not_found`: not a collection endpoint", body = crate::openapi::ErrorBody),
    ))]
pub async fn collect(
    State(app): State<Arc<AppState>>,
    PathParam(kind): PathParam<String>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    request: Request,
) -> ApiResult<Response> {
    let endpoint = Endpoint::from_path_segment(&kind)
        .ok_or_else(|| ApiError::not_found(&format!("collection endpoint '/v1/{kind}'")))?;
    handle(&app, endpoint, peer, request).await
}

/// [`collect`] with one trailing slash: Segment's Java library
/// (analytics-java) posts its batches to `/v1/import/`.
#[utoipa::path(post, path = "/v1/{kind}/", tag = "collection",
    params(("kind" = inline(Kind), Path, description = "The call type, `batch` or `import`")),
    request_body(content = Call, description = "As `POST /v1/{kind}`"),
    security(("writeKey" = []), ()),
    responses(
        (status = 200, description = "As `POST /v1/{kind}`", body = Accepted),
        (status = 400, description = "As `POST /v1/{kind}`", body = crate::openapi::ErrorBody),
        (status = 404, description = "`not_found`: not a collection endpoint", body = crate::openapi::ErrorBody),
    ))]
pub async fn collect_with_slash(
    state: State<Arc<AppState>>,
    kind: PathParam<String>,
    peer: ConnectInfo<SocketAddr>,
    request: Request,
) -> ApiResult<Response> {
    collect(state, kind, peer, request).await
}

/// [`collect`] once the endpoint is known: what the router's handler and
/// [`crate::app::App`]'s direct lane for collection calls both run.
pub(crate) async fn handle(
    app: &AppState,
    endpoint: Endpoint,
    peer: SocketAddr,
    request: Request,
) -> ApiResult<Response> {
    // The request taken whole, not a copy of its headers beside its body.
    let (parts, body) = request.into_parts();
    let headers = &parts.headers;
    // A key in the header is checked before anything is spent on the body.
    let header_route = match basic_write_key(headers) {
        Some(key) => Some(authorize(app, &key).await?),
        None => None,
    };
    // Without a key in the header the body is all we have to go on: such
    // requests draw on the small anonymous share of the body budget.
    let (bytes, _held) = read_capped(
        headers,
        body,
        app.limits.max_body_bytes(endpoint),
        &app.bodies,
        header_route.is_none(),
    )
    .await?;
    let ctx = RequestContext {
        received_at: Utc::now(),
        client_ip: Some(client_ip(headers, peer, app.trust_forwarded_for)),
    };
    // Shapes come from the parse when the schema, rules or filters may need
    // them, outlines when filters may (not knowing the source yet counts as
    // "may").
    let maybe = |need: fn(&SourceRoute) -> bool| header_route.as_deref().is_none_or(need);
    let extras = Extras {
        shapes: app.schema.is_some() || maybe(|r| r.rules.is_some() || !r.filters.is_empty()),
        outlines: maybe(|r| !r.filters.is_empty()),
    };
    let mut envelope = parse_request_with(endpoint, &bytes, &ctx, &app.limits, extras)
        .inspect_err(|_| {
            app.metrics.events_rejected.inc();
        })?;
    let route = match header_route {
        Some(route) => route,
        None => {
            let key = envelope.write_key.as_deref().ok_or_else(|| {
                ApiError::unauthorized("missing write key: use HTTP Basic auth or 'writeKey'")
            })?;
            authorize(app, key).await?
        }
    };
    app.suppressions
        .drop_suppressed(&route.source_id, &mut envelope.events, ctx.received_at);
    let (request, shapes) = append_request(&route, envelope, ctx.received_at, app.schema.is_some());
    let filtered = match &app.tally {
        Some(_) => gate::filtered(&request),
        None => Vec::new(),
    };
    let started = Instant::now();
    let appended = tokio::time::timeout(app.store_timeout, app.log.append(request))
        .await
        .map_err(|_| ApiError::store_timeout())??;
    if let (Some(tally), false) = (&app.tally, filtered.is_empty()) {
        let at = ctx.received_at.timestamp_millis();
        gate::count_filtered(tally, at, appended, &filtered);
    }
    app.metrics
        .commit_seconds
        .observe(started.elapsed().as_secs_f64());
    app.metrics.events_accepted.inc_by(appended.stored);
    app.metrics.events_duplicate.inc_by(appended.duplicates);
    if !route.destinations.is_empty() && appended.stored > 0 {
        (app.on_commit)(!appended.handed);
    }
    if let Some(schema) = &app.schema {
        let at = ctx.received_at.timestamp_millis();
        schema.observe(&route.source_id, shapes.iter().flatten(), at);
    }
    Ok(accepted())
}

/// [`Accepted`] as sent: the same bytes every time, so written once.
const ACCEPTED: &str = r#"{"success":true}"#;

/// The answer to a committed request.
fn accepted() -> Response {
    (
        [(CONTENT_TYPE, HeaderValue::from_static("application/json"))],
        ACCEPTED,
    )
        .into_response()
}

async fn authorize(app: &AppState, key: &str) -> ApiResult<Arc<SourceRoute>> {
    let route = app
        .routes
        .resolve(key)
        .await
        .ok_or_else(|| ApiError::unauthorized("invalid write key"))?;
    if !route.enabled {
        return Err(ApiError::unauthorized("source is disabled"));
    }
    Ok(route)
}

fn append_request(
    route: &SourceRoute,
    envelope: Envelope,
    received_at: chrono::DateTime<Utc>,
    track_schema: bool,
) -> (AppendRequest, Vec<Option<Shape>>) {
    let mut events = Vec::with_capacity(envelope.events.len());
    let mut shapes = Vec::with_capacity(envelope.events.len());
    for event in envelope.events {
        let (stored, shape) = gate::screen(route, event, track_schema);
        events.push(stored);
        shapes.push(shape);
    }
    let request = AppendRequest {
        source_id: route.source_id.clone(),
        received_at,
        events,
    };
    (request, shapes)
}

/// The client address: the peer, or with a trusted proxy in front, the first
/// address of `X-Forwarded-For` (the one the client's side of the proxy saw).
pub fn client_ip(headers: &HeaderMap, peer: SocketAddr, trust_forwarded_for: bool) -> IpAddr {
    if trust_forwarded_for {
        let forwarded = headers
            .get("x-forwarded-for")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(',').next())
            .and_then(|first| first.trim().parse::<IpAddr>().ok());
        if let Some(ip) = forwarded {
            return ip;
        }
    }
    peer.ip()
}

/// `GET /v1/projects/{writeKey}/settings`: the minimal settings document the
/// browser library fetches when not given settings inline. It names only
/// Sluice itself (`Segment.io`, the browser library's own destination).
#[utoipa::path(get, path = "/v1/projects/{key}/settings", tag = "collection",
    params(("key" = String, Path, description = "The source's write key")),
    security(()),
    responses(
        (status = 200, description = "`{integrations: {\"Segment.io\": {apiKey, apiHost, protocol, …}}, plan, …}`", body = Object),
        (status = 401, description = "`unauthorized`: unknown or disabled write key", body = crate::openapi::ErrorBody),
    ))]
pub async fn project_settings(
    State(app): State<Arc<AppState>>,
    PathParam(key): PathParam<String>,
    headers: HeaderMap,
) -> ApiResult<impl IntoResponse> {
    authorize(&app, &key).await?;
    // Point the browser library back at the host it fetched settings from,
    // so it does not fall back to Segment's own API host, and with the
    // scheme it used: analytics.js assumes https when `protocol` is absent.
    let api_host = headers
        .get(axum::http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(|h| format!("{h}/v1"));
    let protocol = request_protocol(&headers, app.trust_forwarded_for);
    // The document echoes the request's `Host` and answers only while the
    // key is enabled: no shared cache in front may keep it and hand one
    // client's (or a forged `Host`'s) answer to another.
    let no_store = [(CACHE_CONTROL, HeaderValue::from_static("no-store"))];
    Ok((
        no_store,
        Json(json!({
            "integrations": {"Segment.io": {"apiKey": key, "apiHost": api_host, "protocol": protocol, "unbundledIntegrations": [], "addBundledMetadata": true}},
            "plan": {"track": {"__default": {"enabled": true, "integrations": {}}}, "identify": {"__default": {"enabled": true}}, "group": {"__default": {"enabled": true}}},
            "enabledMiddleware": {},
            "metrics": {"sampleRate": 0},
        })),
    ))
}

/// The scheme the client used: Sluice itself serves plain HTTP, so `http`
/// unless a trusted proxy in front says otherwise in `X-Forwarded-Proto`.
fn request_protocol(headers: &HeaderMap, trust_proxy: bool) -> &'static str {
    let forwarded = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(',').next())
        .map(str::trim);
    match forwarded {
        Some(p) if trust_proxy && p.eq_ignore_ascii_case("https") => "https",
        _ => "http",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prewritten_answer_is_what_the_documented_type_serializes_to() {
        let documented = serde_json::to_string(&Accepted { success: true });
        assert_eq!(documented.ok().as_deref(), Some(ACCEPTED));
    }
}
