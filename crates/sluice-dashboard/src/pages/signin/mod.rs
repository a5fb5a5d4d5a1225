//! Sign-in, with a username and password or with the admin token, and
//! sign-out. Both forms share the throttle of failed sign-ins. Every
//! sign-in and sign-out is written to the audit log, and so are failed
//! sign-ins, within bounds ([`failures`]).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{ConnectInfo, Query, State};
use axum::http::{Extensions, HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{AppendHeaders, IntoResponse, Response};
use chrono::Utc;
use maud::html;
use sluice_api::admin::admin_token_matches;
use sluice_api::audit::{self, Target};
use sluice_api::ingest::client_ip;
use sluice_api::password;
use sluice_api::principal::{Actor, Via, peer};

pub mod failures;
pub mod next;

use next::safe_next;

use crate::Dash;
use crate::form::Form;
use crate::layout::{PageError, PageResult, SignedIn, check_csrf, page, see_other};
use crate::session::{
    SESSION_COOKIE, SESSION_SECS, SIGNIN_COOKIE, cookie, is_https, random, set_cookie, tokens_match,
};

/// Which sign-in form an error belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Which {
    Password,
    Token,
}

/// The sign-in page; `retry_after` (seconds) when a throttled try was refused.
fn render(
    next: &str,
    error: Option<(Which, &str)>,
    https: bool,
    status: StatusCode,
    retry_after: Option<i64>,
) -> Response {
    // A double-submit token: the sign-in form precedes any session.
    let token = random(32);
    let password_error = error.filter(|(w, _)| *w == Which::Password).map(|e| e.1);
    let token_error = error.filter(|(w, _)| *w == Which::Token).map(|e| e.1);
    let body = html! {
        form.card.narrow method="post" action="/signin" {
            h2 { "With your username" }
            input type="hidden" name="csrf" value=(token);
            input type="hidden" name="next" value=(next);
            div.field {
                label for="username" { "Username" }
                input #username type="text" name="username" autocomplete="username" autocapitalize="none" spellcheck="false";
            }
            div.field {
                label for="password" { "Password" }
                input #password type="password" name="password" autocomplete="current-password"
                    aria-invalid=[password_error.map(|_| "true")] aria-describedby=[password_error.map(|_| "password-error")];
                @if let Some(e) = password_error { p #password-error .field-error role="alert" { (e) } }
            }
            button type="submit" { "Sign in" }
        }
        form.card.narrow method="post" action="/signin" {
            h2 { "With the admin token" }
            input type="hidden" name="csrf" value=(token);
            input type="hidden" name="next" value=(next);
            div.field {
                label for="token" { "Admin token" }
                input #token type="password" name="token" required autocomplete="off"
                    aria-invalid=[token_error.map(|_| "true")] aria-describedby=(if token_error.is_some() { "token-help token-error" } else { "token-help" });
                p #token-help .help { "The token printed when Sluice first started, or your SLUICE_ADMIN_TOKEN." }
                @if let Some(e) = token_error { p #token-error .field-error role="alert" { (e) } }
            }
            button type="submit" { "Sign in with the admin token" }
        }
    };
    let mut res = (
        status,
        AppendHeaders([(
            header::SET_COOKIE,
            set_cookie(SIGNIN_COOKIE, &token, 900, https),
        )]),
        page(None, "Sign in", "", body),
    )
        .into_response();
    if let Some(secs) = retry_after {
        res.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    res
}

/// The client's address, as the collection API reads it.
fn client_address(headers: &HeaderMap, extensions: &Extensions, trust_proxy: bool) -> IpAddr {
    let peer = extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(SocketAddr::from(([0, 0, 0, 0], 0)), |c| c.0);
    client_ip(headers, peer, trust_proxy)
}

fn now_secs() -> f64 {
    Utc::now().timestamp_millis() as f64 / 1000.0
}

/// What a throttled sign-in is told.
fn wait_message(secs: i64) -> String {
    let unit = if secs == 1 { "second" } else { "seconds" };
    format!(
        "Too many failed sign-ins: wait {secs} {unit}, then try again. \
         (Each wrong password or token makes the wait longer, up to a minute.)"
    )
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
        None,
    ))
}

pub async fn submit(
    State(dash): State<Arc<Dash>>,
    headers: HeaderMap,
    extensions: Extensions,
    form: Form,
) -> PageResult {
    let expected = cookie(&headers, SIGNIN_COOKIE).unwrap_or("");
    if !tokens_match(form.get("csrf"), expected) {
        return Err(PageError::Csrf);
    }
    if let Some(o) = form.overflow {
        return Err(PageError::FormTooLarge(o));
    }
    let https = is_https(&headers, dash.app.trust_forwarded_for);
    let next = safe_next(Some(form.get("next"))).to_owned();
    let ip = client_address(&headers, &extensions, dash.app.trust_forwarded_for);
    let which = if form.fields.iter().any(|(k, _)| k == "token") {
        Which::Token
    } else {
        Which::Password
    };
    let user_agent: Option<String> = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.chars().take(300).collect());
    let username = (which == Which::Password).then(|| form.get("username").to_lowercase());
    let failure = |reason: &'static str, user_id: Option<String>| failures::Failure {
        ip,
        user_agent: user_agent.clone(),
        username: username.clone(),
        user_id,
        reason,
    };
    // A throttled try is not checked at all: guessing during the wait gains nothing.
    if let Err(wait) = dash.throttle(|t| t.check(ip, now_secs())) {
        failures::record(&dash, failure("throttled", None));
        return Ok(render(
            &next,
            Some((which, &wait_message(wait))),
            https,
            StatusCode::TOO_MANY_REQUESTS,
            Some(wait),
        ));
    }
    let issued = match &username {
        None => {
            if admin_token_matches(&dash.app, form.get("token")) {
                Ok(dash.sessions.issue(dash.app.store.as_ref()).await?)
            } else {
                Err(None)
            }
        }
        Some(username) => {
            let user = match username.is_empty() {
                true => None,
                false => dash.app.store.get_user_by_username(username).await?,
            };
            let stored = user.as_ref().map(|u| u.password_hash.clone());
            let ok = password::verify(form.raw("password").to_owned(), stored).await;
            match (ok, user) {
                (true, Some(user)) => {
                    let store = dash.app.store.as_ref();
                    let ip = Some(ip.to_string());
                    Ok(dash
                        .sessions
                        .issue_for_user(store, &user, ip, user_agent.clone())
                        .await?)
                }
                (_, user) => Err(user.map(|u| u.id)),
            }
        }
    };
    let (session, value) = match issued {
        Ok(made) => made,
        Err(user_id) => {
            dash.throttle(|t| t.failure(ip, now_secs()));
            // For the token, the admin API's own message for a wrong token.
            let message = match which {
                Which::Token => "invalid admin token",
                Which::Password => "wrong username or password",
            };
            failures::record(&dash, failure(message, user_id));
            return Ok(render(
                &next,
                Some((which, message)),
                https,
                StatusCode::UNAUTHORIZED,
                None,
            ));
        }
    };
    dash.throttle(|t| t.success(ip));
    let actor = Actor::of_request(
        session.principal.clone(),
        &headers,
        peer(&extensions),
        dash.app.trust_forwarded_for,
        Via::Dashboard,
    );
    let target = Target::new("session", "sign-in", Some(&session.id));
    let carried = failures::on_success(&dash, ip);
    audit::note(&dash.app, &actor, target, carried).await;
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
    dash.sessions.revoke(&dash.app, &session).await?;
    let https = is_https(&headers, dash.app.trust_forwarded_for);
    Ok((
        AppendHeaders([(header::SET_COOKIE, set_cookie(SESSION_COOKIE, "", 0, https))]),
        see_other("/signin"),
    )
        .into_response())
}
