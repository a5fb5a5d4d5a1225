//! [`App`]: the HTTP application as the server calls it, once per request.
//!
//! Collection calls (`POST /v1/{kind}`) are nearly all of Sluice's traffic.
//! For a single `/v1/track` call, the router's own work around the handler
//! took about a fifth of the request CPU in a profile (BENCHMARKS.md,
//! "Measured choices"):
//! - the route match and its parameters;
//! - a clone of the route's boxed service;
//! - the CORS layer rebuilding its headers, a `Vary` list joined anew
//!   every time;
//! - the mapping of the response.
//!
//! So `App` recognises a collection call itself and hands it straight to
//! the collection handler (the direct lane). Every other request, and a
//! collection path the lane does not take as written (percent-encoded, say),
//! goes through the router, which stays the one route table that the
//! OpenAPI document describes.
//!
//! The direct lane adds what the router's layers would, so that a client
//! cannot tell the lanes apart (a server test sends the same requests down
//! both and compares the answers):
//! - the CORS headers of a non-preflight request under
//!   [`crate::cors_layer`], from [`cors_headers`] (a unit test checks them
//!   against the layer itself);
//! - the request count under the route pattern `/v1/{kind}`
//!   ([`crate::front`]).
//!
//! Collection paths need no admin token, so the front's token check has
//! nothing to do on this lane.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::{ConnectInfo, Request};
use axum::http::header::{
    ACCESS_CONTROL_ALLOW_CREDENTIALS, ACCESS_CONTROL_ALLOW_ORIGIN, ORIGIN, VARY,
};
use axum::http::{HeaderMap, HeaderValue, Method};
use axum::response::{IntoResponse, Response};
use sluice_model::Endpoint;
use tower::ServiceExt;

use crate::{AppState, front, ingest};

/// The route patterns collection calls are counted under, as the router
/// names them: without and with the trailing slash.
const COLLECTION_ROUTE: &str = "/v1/{kind}";
const COLLECTION_ROUTE_SLASH: &str = "/v1/{kind}/";

/// The router, plus the direct lane for collection calls. Cheap to clone
/// (two reference counts).
#[derive(Clone)]
pub struct App {
    router: Router,
    /// `None` for a router without collection routes (the metrics listener).
    lane: Option<Arc<AppState>>,
}

impl App {
    /// `router` with the direct lane for collection calls, which it must
    /// serve too (it is [`crate::router`], perhaps merged with more routes).
    pub fn new(state: Arc<AppState>, router: Router) -> App {
        App {
            router,
            lane: Some(state),
        }
    }

    /// `router` alone, for a listener that serves no collection calls.
    pub fn router_only(router: Router) -> App {
        App { router, lane: None }
    }

    /// Answers one request from `peer`.
    pub async fn handle(self, mut request: Request, peer: SocketAddr) -> Response {
        if let Some(state) = &self.lane
            && let Some((endpoint, route)) = collection_call(&request)
        {
            return collect(state, endpoint, route, peer, request).await;
        }
        request.extensions_mut().insert(ConnectInfo(peer));
        let answer: Result<Response, Infallible> = self.router.oneshot(request).await;
        match answer {
            Ok(response) => response,
            Err(never) => match never {},
        }
    }
}

/// The endpoint of a request the direct lane takes: `POST /v1/<kind>` with
/// the kind spelled as Segment's libraries send it, with or without one
/// trailing slash (analytics-java posts to `/v1/import/`).
/// Also returns the route it is counted under.
fn collection_call(request: &Request) -> Option<(Endpoint, &'static str)> {
    if request.method() != Method::POST {
        return None;
    }
    let kind = request.uri().path().strip_prefix("/v1/")?;
    match kind.strip_suffix('/') {
        Some(kind) => Some((Endpoint::from_path_segment(kind)?, COLLECTION_ROUTE_SLASH)),
        None => Some((Endpoint::from_path_segment(kind)?, COLLECTION_ROUTE)),
    }
}

/// The collection handler, with the CORS headers and the count that the
/// router's layers would add.
async fn collect(
    state: &AppState,
    endpoint: Endpoint,
    route: &'static str,
    peer: SocketAddr,
    request: Request,
) -> Response {
    let start = Instant::now();
    let origin = request.headers().get(ORIGIN).cloned();
    let mut response = match ingest::handle(state, endpoint, peer, request).await {
        Ok(response) => response,
        Err(refused) => refused.into_response(),
    };
    cors_headers(response.headers_mut(), origin);
    front::count(state, route.to_owned(), response.status().as_u16(), start);
    response
}

/// The CORS headers [`crate::cors_layer`] puts on the answer to a request
/// that is not a preflight, in the same order: `Vary` appended to any the
/// handler set, credentials allowed, and the request's `Origin` mirrored
/// when it sent one.
pub fn cors_headers(headers: &mut HeaderMap, origin: Option<HeaderValue>) {
    // The request headers a preflight varies with, as tower-http lists them.
    const PREFLIGHT_VARY: HeaderValue = HeaderValue::from_static(
        "origin, access-control-request-method, access-control-request-headers",
    );
    headers.append(VARY, PREFLIGHT_VARY);
    headers.insert(
        ACCESS_CONTROL_ALLOW_CREDENTIALS,
        HeaderValue::from_static("true"),
    );
    if let Some(origin) = origin {
        headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::header::CONTENT_TYPE;
    use tower::{Layer, service_fn};

    /// A handler's answer as the collection handler writes one.
    fn answer() -> Response {
        let mut response = Response::new(Body::from(r#"{"success":true}"#));
        response
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        response
    }

    async fn through_the_layer(origin: Option<&'static str>) -> HeaderMap {
        let inner = service_fn(|_: Request| async { Ok::<_, Infallible>(answer()) });
        let mut request = Request::new(Body::empty());
        *request.method_mut() = Method::POST;
        if let Some(origin) = origin {
            request
                .headers_mut()
                .insert(ORIGIN, HeaderValue::from_static(origin));
        }
        match crate::cors_layer().layer(inner).oneshot(request).await {
            Ok(response) => response.headers().clone(),
            Err(never) => match never {},
        }
    }

    fn direct(origin: Option<&'static str>) -> HeaderMap {
        let mut response = answer();
        cors_headers(response.headers_mut(), origin.map(HeaderValue::from_static));
        response.headers().clone()
    }

    fn in_order(headers: &HeaderMap) -> Vec<(String, String)> {
        headers
            .iter()
            .map(|(k, v)| (k.to_string(), String::from_utf8_lossy(v.as_bytes()).into()))
            .collect()
    }

    #[tokio::test]
    async fn direct_cors_headers_are_the_layers_with_an_origin() {
        let layer = through_the_layer(Some("https://shop.example")).await;
        let mine = direct(Some("https://shop.example"));
        assert_eq!(in_order(&mine), in_order(&layer));
        assert_eq!(
            mine.get(ACCESS_CONTROL_ALLOW_ORIGIN),
            Some(&HeaderValue::from_static("https://shop.example"))
        );
    }

    #[tokio::test]
    async fn direct_cors_headers_are_the_layers_without_an_origin() {
        let layer = through_the_layer(None).await;
        let mine = direct(None);
        assert_eq!(in_order(&mine), in_order(&layer));
        assert!(mine.get(ACCESS_CONTROL_ALLOW_ORIGIN).is_none());
    }

    fn post(path: &str) -> Request {
        let mut request = Request::new(Body::empty());
        *request.method_mut() = Method::POST;
        *request.uri_mut() = path.parse().unwrap_or_default();
        request
    }

    #[test]
    fn the_lane_takes_collection_posts_as_clients_spell_them() {
        assert!(collection_call(&post("/v1/track")).is_some());
        assert!(collection_call(&post("/v1/batch?x=1")).is_some());
        assert!(collection_call(&post("/v1/t")).is_some());
        assert!(collection_call(&post("/v1/import/")).is_some());
        for other in [
            "/v1/%74rack",
            "/v1/track//",
            "/v1/projects",
            "/api/v1/sources",
            "/v1/",
        ] {
            assert!(collection_call(&post(other)).is_none(), "{other}");
        }
        let mut get = post("/v1/track");
        *get.method_mut() = Method::GET;
        assert!(collection_call(&get).is_none());
    }
}
