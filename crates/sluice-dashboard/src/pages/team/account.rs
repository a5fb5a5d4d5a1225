//! `/account`: who is signed in and with which role; a user also sees
//! their sessions and can sign out of all of them.

use std::sync::Arc;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::http::header;
use axum::response::{AppendHeaders, IntoResponse};
use chrono::{DateTime, Utc};
use maud::html;
use sluice_api::admin::team::sessions;

use super::role_words;
use crate::Dash;
use crate::form::Form;
use crate::layout::{PageResult, SignedIn, check_csrf, csrf_field, page, see_other, when};
use crate::session::{SESSION_COOKIE, is_https, set_cookie};

pub async fn show(State(dash): State<Arc<Dash>>, SignedIn(s): SignedIn) -> PageResult {
    let now = Utc::now().timestamp();
    let live = match s.user_id() {
        Some(id) => dash.app.store.list_user_sessions(id, now).await?,
        None => Vec::new(),
    };
    let body = html! {
        dl.facts {
            dt { "Signed in as" } dd { (s.principal.name()) }
            dt { "Role" } dd { (s.role()) " — " (role_words(s.role())) }
        }
        @if s.user_id().is_some() {
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
            form.inline method="post" action="/account/sessions/revoke" {
                (csrf_field(&s))
                button type="submit" { "Sign out everywhere" }
            }
            p.help { "Ask an admin to change your password or role." }
        } @else {
            p { "The admin token signs in with every right. Add " a href="/users" { "users" } " so that people sign in as themselves, and their changes show in the audit log under their names." }
        }
    };
    Ok(page(Some(&s), "Your account", "", body).into_response())
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
