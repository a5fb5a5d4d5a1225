//! Tests of [`super`]: the 404 page of a path that does not parse.

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::http::Request;
use axum::routing::{get, post};
use tower::ServiceExt;

use super::*;

/// What the real pages answer for an id that parses but does not exist.
async fn source(PagePath(_id): PagePath<String>) -> PageResult<String> {
    Err(ApiError::not_found("source").into())
}

async fn delivery(PagePath(id): PagePath<i64>) -> String {
    id.to_string()
}

async fn trait_page(PagePath(id): PagePath<String>) -> String {
    id
}

fn app() -> Router {
    Router::new()
        .route("/sources/{id}", get(source))
        .route("/sources/{id}/schema", get(source))
        .route("/deliveries/{id}/replay", post(delivery))
        .nest(
            "/computed-traits",
            Router::new().route("/{id}", get(trait_page)),
        )
}

async fn answer(method: &str, path: &str) -> (StatusCode, String) {
    let req = Request::builder()
        .method(method)
        .uri(path)
        .body(Body::empty())
        .unwrap_or_default();
    let res = app().oneshot(req).await.unwrap_or_else(|e| match e {});
    let status = res.status();
    let body = to_bytes(res.into_body(), 1 << 20).await.unwrap_or_default();
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// The message of the error page, the first paragraph of its alert.
fn message(html: &str) -> &str {
    let start = html.find(r#"role="alert"><p>"#).map_or(0, |i| i + 16);
    let end = html[start..].find("</p>").map_or(html.len(), |i| start + i);
    &html[start..end]
}

#[tokio::test]
async fn an_id_that_does_not_parse_gets_the_same_page_as_one_that_does_not_exist() {
    let (status, missing) = answer("GET", "/sources/nope").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(message(&missing), "source not found");
    for path in ["/sources/%FF", "/sources/%C3%28", "/sources/%FF/schema"] {
        let (status, html) = answer("GET", path).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        assert_eq!(message(&html), "source not found", "{path}: {html}");
        assert_eq!(html, missing, "{path}");
    }
}

#[tokio::test]
async fn the_404_names_the_kind_of_resource_of_the_route() {
    for (method, path, want) in [
        ("POST", "/deliveries/abc/replay", "delivery not found"),
        ("GET", "/computed-traits/%FF", "computed trait not found"),
    ] {
        let (status, html) = answer(method, path).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        assert_eq!(message(&html), want, "{path}: {html}");
        assert!(!html.contains("this path names"), "{path}");
    }
}
