//! Sign-in with the admin token, and sign-out.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{AppendHeaders, IntoResponse, Response};
use maud::html;
use sluice_api::admin::admin_token_matches;

use crate::Dash;
use crate::form::Form;
use crate::layout::{PageError, PageResult, SignedIn, check_csrf, page, see_other};
use crate::session::{
    SESSION_COOKIE, SESSION_SECS, SIGNIN_COOKIE, cookie, is_https, random, set_cookie, tokens_match,
};

/// Only same-site paths are followed after sign-in.
fn safe_next(next: Option<&str>) -> &str {
    match next {
        Some(n) if n.starts_with('/') && !n.starts_with("//") && !n.contains('\\') => n,
        _ => "/",
    }
}

fn render(next: &str, error: Option<&str>, https: bool, status: StatusCode) -> Response {
    // A double-submit token: the sign-in form precedes any session.
    let token = random(32);
    let body = html! {
        form.card.narrow method="post" action="/signin" {
            input type="hidden" name="csrf" value=(token);
            input type="hidden" name="next" value=(next);
            div.field {
                label for="token" { "Admin token" }
                input #token type="password" name="token" required autocomplete="current-password"
                    aria-invalid=[error.map(|_| "true")] aria-describedby=(if error.is_some() { "token-help token-error" } else { "token-help" });
                p #token-help .help { "The token printed when Sluice first started, or your SLUICE_ADMIN_TOKEN." }
                @if let Some(e) = error { p #token-error .field-error role="alert" { (e) } }
            }
            button type="submit" { "Sign in" }
        }
    };
    (
        status,
        AppendHeaders([(
            header::SET_COOKIE,
            set_cookie(SIGNIN_COOKIE, &token, 900, https),
        )]),
        page(None, "Sign in", "", body),
    )
        .into_response()
}

pub async fn form(
    State(dash): State<Arc<Dash>>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> PageResult {
    if dash
        .sessions
        .verify(dash.app.store.as_ref(), &headers)
        .await?
        .is_some()
    {
        return Ok(see_other(safe_next(q.get("next").map(String::as_str))));
    }
    let https = is_https(&headers, dash.app.trust_forwarded_for);
    Ok(render(
        safe_next(q.get("next").map(String::as_str)),
        None,
        https,
        StatusCode::OK,
    ))
}

pub async fn submit(State(dash): State<Arc<Dash>>, headers: HeaderMap, form: Form) -> PageResult {
    let expected = cookie(&headers, SIGNIN_COOKIE).unwrap_or("");
    if !tokens_match(form.get("csrf"), expected) {
        return Err(PageError::Csrf);
    }
    let https = is_https(&headers, dash.app.trust_forwarded_for);
    let next = safe_next(Some(form.get("next"))).to_owned();
    if !admin_token_matches(&dash.app, form.get("token")) {
        // The admin API's own message for a wrong token.
        return Ok(render(
            &next,
            Some("invalid admin token"),
            https,
            StatusCode::UNAUTHORIZED,
        ));
    }
    let (_, value) = dash.sessions.issue(dash.app.store.as_ref()).await?;
    Ok((
        AppendHeaders([
            (
                header::SET_COOKIE,
                set_cookie(SESSION_COOKIE, &value, SESSION_SECS, https),
            ),
            (header::SET_COOKIE, set_cookie(SIGNIN_COOKIE, "", 0, https)),
        ]),
        see_other(&next),
    )
        .into_response())
}

pub async fn sign_out(
    State(dash): State<Arc<Dash>>,
    SignedIn(session): SignedIn,
    headers: HeaderMap,
    form: Form,
) -> PageResult {
    check_csrf(&session, &form)?;
    dash.sessions.revoke(&session);
    let https = is_https(&headers, dash.app.trust_forwarded_for);
    Ok((
        AppendHeaders([(header::SET_COOKIE, set_cookie(SESSION_COOKIE, "", 0, https))]),
        see_other("/signin"),
    )
        .into_response())
}
