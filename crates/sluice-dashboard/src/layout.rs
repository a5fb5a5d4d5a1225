//! The page shell (header, navigation, main), security headers, the
//! signed-in and path extractors, and error pages.

use std::sync::Arc;

use axum::extract::{FromRequestParts, MatchedPath, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Redirect, Response};
use chrono::{DateTime, Utc};
use maud::{DOCTYPE, Markup, html};
use serde::de::DeserializeOwned;
use sluice_api::ApiError;
use sluice_api::path_param::PathParam;
use sluice_api::principal::{Actor, Via, peer};
use sluice_store::Role;

use crate::Dash;
use crate::access::required_role;
use crate::form::{Form, Overflow};
use crate::session::{Session, tokens_match};

/// The Content-Security-Policy of every dashboard response: scripts and
/// styles only from our own files (no inline code), no frames, forms post
/// only to us.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
img-src 'self' data:; connect-src 'self'; form-action 'self'; \
frame-ancestors 'none'; base-uri 'none'";

/// The navigation, in order: (key, path, label). A source's schema and a
/// destination's filters are reached from their source and destination.
pub const NAV: &[(&str, &str, &str)] = &[
    ("overview", "/", "Overview"),
    ("sources", "/sources", "Sources"),
    ("destinations", "/destinations", "Destinations"),
    ("health", "/delivery-health", "Health"),
    ("catalog", "/catalog", "Catalog"),
    ("debugger", "/debugger", "Debugger"),
    ("usage", "/usage", "Usage"),
    ("traits", "/computed-traits", "Computed traits"),
    ("audiences", "/audiences", "Audiences"),
    ("profiles", "/profiles", "Profiles"),
    ("regulations", "/regulations", "Regulations"),
    ("users", "/users", "Users"),
    ("audit", "/audit", "Audit log"),
];

/// A page answers within `storage.timeout_ms`, as the admin API does: a
/// store that hangs gets the error page (`503 unavailable`), not a browser
/// spinning for as long as the database is frozen.
pub async fn store_deadline(State(dash): State<Arc<Dash>>, req: Request, next: Next) -> Response {
    match tokio::time::timeout(dash.app.store_timeout, next.run(req)).await {
        Ok(res) => res,
        Err(_) => PageError::Api(ApiError::store_timeout()).into_response(),
    }
}

/// Adds the security headers to every dashboard response.
pub async fn security_headers(req: Request, next: Next) -> Response {
    let mut res = next.run(req).await;
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    if !h.contains_key(header::CACHE_CONTROL) {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    res
}

/// A whole page. `session` is `None` on the sign-in and error pages.
pub fn page(session: Option<&Session>, title: &str, active: &str, body: Markup) -> Html<String> {
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · Sluice" }
                link rel="icon" href="data:,";
                link rel="stylesheet" href="/assets/dashboard.css";
                script src="/assets/dashboard.js" defer {}
            }
            body class=[session.filter(|s| s.role() < Role::Editor).map(|_| "read-only")] {
                a.skip href="#main" { "Skip to content" }
                header.top {
                    a.brand href="/" { "Sluice" }
                    @if let Some(s) = session {
                        nav aria-label="Main" {
                            ul {
                                @for (key, href, label) in NAV.iter().filter(|(_, href, _)| allowed(s, href)) {
                                    li {
                                        a href=(href) aria-current=[(*key == active).then_some("page")] { (label) }
                                    }
                                }
                            }
                        }
                        a.account href="/account" { (s.principal.name()) " (" (s.role()) ")" }
                        form.signout method="post" action="/signout" {
                            (csrf_field(s))
                            button.link type="submit" { "Sign out" }
                        }
                    }
                }
                main #main tabindex="-1" {
                    h1 { (title) }
                    (body)
                }
            }
        }
    };
    Html(markup.into_string())
}

/// Whether the session's role opens the page at `href`.
pub fn allowed(session: &Session, href: &str) -> bool {
    session.role() >= required_role(&axum::http::Method::GET, href)
}

/// The hidden CSRF field every state-changing form carries.
pub fn csrf_field(session: &Session) -> Markup {
    html! { input type="hidden" name="csrf" value=(session.csrf); }
}

/// A time as the dashboard shows it (UTC, to the second).
pub fn when(t: &DateTime<Utc>) -> Markup {
    html! { time datetime=(t.to_rfc3339()) { (t.format("%Y-%m-%d %H:%M:%S")) } }
}

/// Why a page could not be served: the API's own error, or a failed CSRF
/// check. Rendered as a page with the message, never internals.
#[derive(Debug, thiserror::Error)]
pub enum PageError {
    #[error(transparent)]
    Api(#[from] ApiError),
    #[error("CSRF check failed")]
    Csrf,
    /// A form over its cap, on a page that cannot show it again.
    #[error("form too large")]
    FormTooLarge(Overflow),
}

impl From<sluice_store::StoreError> for PageError {
    fn from(e: sluice_store::StoreError) -> Self {
        PageError::Api(e.into())
    }
}

pub type PageResult<T = Response> = Result<T, PageError>;

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let (status, code, message) = match &self {
            PageError::Api(e) => (e.status, e.code, e.message.clone()),
            PageError::Csrf => (
                StatusCode::FORBIDDEN,
                "csrf",
                "This form was not sent from a page of this dashboard session (CSRF check \
                 failed). Go back, reload the page and try again."
                    .to_owned(),
            ),
            PageError::FormTooLarge(o) => (
                StatusCode::PAYLOAD_TOO_LARGE,
                "body_too_large",
                format!(
                    "This form came to more than {}, so nothing was saved. Go back: your \
                     browser still holds what you typed; shorten it and send it again.",
                    o.limit_text()
                ),
            ),
        };
        let body = html! {
            div.error role="alert" {
                p { (message) }
                p.muted { "Code: " code { (code) } }
            }
            p { a href="/" { "Back to the overview" } }
        };
        (
            status,
            page(None, &format!("Error {}", status.as_u16()), "", body),
        )
            .into_response()
    }
}

/// Fails unless the form carries this session's CSRF token and came
/// whole: a form cut at its cap is never acted on.
pub fn check_csrf(session: &Session, form: &Form) -> PageResult<()> {
    check_csrf_token(session, form)?;
    match &form.overflow {
        Some(o) => Err(PageError::FormTooLarge(o.clone())),
        None => Ok(()),
    }
}

/// Fails unless the form carries this session's CSRF token, whole or not:
/// for the pages that show a form cut at its cap again.
pub fn check_csrf_token(session: &Session, form: &Form) -> PageResult<()> {
    if tokens_match(form.get("csrf"), &session.csrf) {
        Ok(())
    } else {
        Err(PageError::Csrf)
    }
}

/// A signed-in request whose role the route allows ([`crate::access`]).
/// Without a valid session, pages redirect to sign-in; with a role too low,
/// the request is refused with the `403` page before the handler runs.
pub struct SignedIn(pub Session);

impl FromRequestParts<Arc<Dash>> for SignedIn {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, dash: &Arc<Dash>) -> Result<Self, Response> {
        match dash
            .sessions
            .verify(dash.app.store.as_ref(), &parts.headers)
            .await
        {
            Ok(Some(mut s)) => {
                let route = parts
                    .extensions
                    .get::<MatchedPath>()
                    .map_or("", |p| p.as_str());
                let needed = required_role(&parts.method, route);
                if s.role() < needed {
                    let refused = sluice_api::admin::forbidden(&s.principal, needed);
                    return Err(PageError::Api(refused).into_response());
                }
                s.actor = Actor::of_request(
                    s.principal.clone(),
                    &parts.headers,
                    peer(&parts.extensions),
                    dash.app.trust_forwarded_for,
                    Via::Dashboard,
                );
                Ok(SignedIn(s))
            }
            Ok(None) => {
                let next = parts
                    .uri
                    .path_and_query()
                    .map_or("/", |p| p.as_str())
                    .to_owned();
                let target = if parts.method == axum::http::Method::GET && next != "/" {
                    format!("/signin?next={}", urlencode(&next))
                } else {
                    "/signin".to_owned()
                };
                Err(Redirect::to(&target).into_response())
            }
            Err(e) => Err(PageError::from(e).into_response()),
        }
    }
}

/// A page's path parameter. One that does not parse (`%FF`, a delivery id
/// that is not a number) names no page: the dashboard's own 404 page with
/// the very message of an id that does not exist (`/sources/%FF` and
/// `/sources/nope` both say "source not found"), not axum's plain-text 400.
pub struct PagePath<T>(pub T);

impl<T, S> FromRequestParts<S> for PagePath<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = PageError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, PageError> {
        // The API's rejection already names the kind the route names.
        match PathParam::<T>::from_request_parts(parts, state).await {
            Ok(PathParam(value)) => Ok(PagePath(value)),
            Err(e) => Err(e.into()),
        }
    }
}

pub fn urlencode(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// A 303 to `to` (after a successful POST).
pub fn see_other(to: &str) -> Response {
    Redirect::to(to).into_response()
}

#[cfg(test)]
#[path = "layout_tests.rs"]
mod tests;
