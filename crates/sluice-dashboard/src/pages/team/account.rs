//! `/account`: who is signed in and with which role; a user also changes
//! their own password here (through the admin API's handler, so the same
//! rules and messages), sees their sessions and can sign out of all.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::header;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{AppendHeaders, IntoResponse};
use chrono::{DateTime, Utc};
use maud::{Markup, html};
use sluice_api::ApiError;
use sluice_api::admin::team::{own_password, sessions};
use sluice_api::password::MIN_CHARS;

use super::role_words;
use crate::Dash;
use crate::form::Form;
use crate::layout::{PageResult, SignedIn, check_csrf, csrf_field, page, see_other, when};
use crate::session::{SESSION_COOKIE, Session, is_https, set_cookie};

/// The password form's fields, each with its label.
const FIELDS: [(&str, &str, &str); 3] = [
    ("current_password", "Current password", "current-password"),
    ("new_password", "New password", "new-password"),
    ("confirmation", "New password again", "new-password"),
];

/// The field an error of the password form belongs to.
fn field_of(e: &ApiError) -> &'static str {
    if e.code == "wrong_password" {
        return "current_password";
    }
    FIELDS
        .iter()
        .map(|(name, _, _)| *name)
        .find(|name| e.message.starts_with(&format!("{name}:")))
        .unwrap_or("current_password")
}

fn password_form(s: &Session, error: Option<&ApiError>) -> Markup {
    let at = error.map(field_of);
    html! {
        h2 #password-h { "Change your password" }
        form.card.narrow.own method="post" action="/account/password" aria-labelledby="password-h" {
            (csrf_field(s))
            @for (name, label, complete) in FIELDS {
                @let wrong = at == Some(name);
                @let help = format!("{name}-help");
                @let described = if wrong { format!("{help} {name}-error") } else { help.clone() };
                div.field {
                    label for=(name) { (label) }
                    input id=(name) type="password" name=(name) required autocomplete=(complete)
                        minlength=[(name != "current_password").then_some(MIN_CHARS)]
                        aria-invalid=[wrong.then_some("true")] aria-describedby=(described);
                    p.help id=(help) {
                        @match name {
                            "current_password" => "The password you signed in with.",
                            "new_password" => { "At least " (MIN_CHARS) " characters, not the current one." }
                            _ => "Type the new password once more.",
                        }
                    }
                    @if wrong { @if let Some(e) = error { p.field-error id={ (name) "-error" } role="alert" { (e.message) } } }
                }
            }
            p.help { "Your other sessions are signed out; this one stays signed in. Your API tokens keep working." }
            button type="submit" { "Change password" }
        }
    }
}

async fn body(dash: &Dash, s: &Session, error: Option<&ApiError>) -> PageResult<Markup> {
    let now = Utc::now().timestamp();
    let live = match s.user_id() {
        Some(id) => dash.app.store.list_user_sessions(id, now).await?,
        None => Vec::new(),
    };
    Ok(html! {
        dl.facts {
            dt { "Signed in as" } dd { (s.principal.name()) }
            dt { "Role" } dd { (s.role()) " — " (role_words(s.role())) }
        }
        @if s.user_id().is_some() {
            (password_form(s, error))
            h2 #sessions-h { "Your sessions" }
            ul aria-labelledby="sessions-h" {
                @for x in &live {
                    li {
                        @if let Some(t) = DateTime::<Utc>::from_timestamp(x.created_at, 0) { (when(&t)) }
                        " · " (x.ip.as_deref().unwrap_or("")) " · " (x.user_agent.as_deref().unwrap_or(""))
                        @if x.id == s.id { " " strong { "(this one)" } }
                    }
                }
            }
            form.inline.own method="post" action="/account/sessions/revoke" {
                (csrf_field(s))
                button type="submit" { "Sign out everywhere" }
            }
            p.help { "Ask an admin to change your role." }
        } @else {
            p { "The admin token signs in with every right, and has no password to change: replace it with " code { "admin_token" } " or " code { "SLUICE_ADMIN_TOKEN" } ". Add " a href="/users" { "users" } " so that people sign in as themselves, and their changes show in the audit log under their names." }
        }
    })
}

pub async fn show(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    Query(q): Query<HashMap<String, String>>,
) -> PageResult {
    let notice = q.get("password").map(|n| {
        let n: u64 = n.parse().unwrap_or(0);
        let others = match n {
            0 => "You were signed in nowhere else.".to_owned(),
            1 => "Your 1 other session was signed out.".to_owned(),
            n => format!("Your {n} other sessions were signed out."),
        };
        format!("Password changed. {others}")
    });
    let markup = html! {
        @if let Some(m) = notice { div.notice role="status" { p { (m) } } }
        (body(&dash, &s, None).await?)
    };
    Ok(page(Some(&s), "Your account", "", markup).into_response())
}

/// Changes the signed-in user's password; a refusal is shown on its field.
pub async fn password(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    form: Form,
) -> PageResult {
    check_csrf(&s, &form)?;
    let (current, new) = (form.raw("current_password"), form.raw("new_password"));
    let answer = if new != form.raw("confirmation") {
        Err(ApiError::invalid(
            "confirmation",
            "does not match the new password",
        ))
    } else {
        own_password::change_own(&dash.app, &s.actor, current, new, Some(&s.id)).await
    };
    match answer {
        Ok(done) => Ok(see_other(&format!(
            "/account?password={}",
            done.sessions_signed_out
        ))),
        Err(e) if e.status.is_client_error() => {
            let markup = body(&dash, &s, Some(&e)).await?;
            let mut res = (e.status, page(Some(&s), "Your account", "", markup)).into_response();
            if e.status == StatusCode::TOO_MANY_REQUESTS
                && let Some(wait) = own_password::retry_after(&s.actor)
            {
                res.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from(wait));
            }
            Ok(res)
        }
        Err(e) => Err(e.into()),
    }
}

pub async fn revoke_all(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    headers: HeaderMap,
    form: Form,
) -> PageResult {
    check_csrf(&s, &form)?;
    match s.user_id() {
        Some(id) => {
            sessions::revoke(&dash.app, &s.actor, id, None).await?;
        }
        None => dash.sessions.revoke(&dash.app, &s).await?,
    }
    let https = is_https(&headers, dash.app.trust_forwarded_for);
    Ok((
        AppendHeaders([(header::SET_COOKIE, set_cookie(SESSION_COOKIE, "", 0, https))]),
        see_other("/signin"),
    )
        .into_response())
}
