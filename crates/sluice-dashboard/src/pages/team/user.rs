//! `/users/{id}`: one user: the role, a new password, the signed-in
//! sessions (each can be signed out, or all at once), and deletion.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::response::IntoResponse;
use chrono::{DateTime, Utc};
use maud::{Markup, html};
use serde_json::{Map, Value};
use sluice_api::ApiError;
use sluice_api::admin::extract::JsonObject;
use sluice_api::admin::team::{sessions, users as api};
use sluice_api::path_param::PathParam;
use sluice_store::User;

use super::role_select;
use crate::Dash;
use crate::form::Form;
use crate::layout::{
    PagePath, PageResult, SignedIn, check_csrf, csrf_field, page, see_other, urlencode, when,
};
use crate::session::Session;
use crate::widgets::api_error;

fn notice(q: &HashMap<String, String>) -> Option<&'static str> {
    [
        ("created", "User added. They can sign in now."),
        ("role", "Role changed."),
        (
            "password",
            "Password changed; the user's sessions were signed out.",
        ),
        ("signed-out", "Signed out."),
    ]
    .into_iter()
    .find(|(k, _)| q.contains_key(*k))
    .map(|(_, m)| m)
}

fn at(secs: i64) -> Markup {
    match DateTime::<Utc>::from_timestamp(secs, 0) {
        Some(t) => when(&t),
        None => html! {},
    }
}

async fn body(
    dash: &Dash,
    s: &Session,
    user: &User,
    error: Option<&ApiError>,
) -> PageResult<Markup> {
    let now = Utc::now().timestamp();
    let live = dash.app.store.list_user_sessions(&user.id, now).await?;
    let base = format!("/users/{}", urlencode(&user.id));
    Ok(html! {
        p { "Role: " strong { (user.role) } ". Added " (when(&user.created_at)) "." }
        @if let Some(e) = error { (api_error(e)) }
        h2 #role-h { "Role" }
        form.card method="post" action={ (base) "/role" } aria-labelledby="role-h" {
            (csrf_field(s))
            div.field { label for="role" { "Role" } (role_select("role", user.role)) }
            button type="submit" { "Change role" }
        }
        h2 #password-h { "New password" }
        form.card method="post" action={ (base) "/password" } aria-labelledby="password-h" {
            (csrf_field(s))
            div.field {
                label for="password" { "New password" }
                input #password type="password" name="password" required minlength="12" autocomplete="new-password" aria-describedby="password-help";
                p.help #password-help { "At least 12 characters. Every session of this user is signed out." }
            }
            button type="submit" { "Set password" }
        }
        h2 #sessions-h { "Sessions" }
        @if live.is_empty() {
            p #no-sessions { "Not signed in anywhere." }
        } @else {
            div.table-wrap {
                table #sessions aria-labelledby="sessions-h" {
                    thead { tr { th scope="col" { "Signed in (UTC)" } th scope="col" { "Address" } th scope="col" { "Browser" } th scope="col" { "Expires (UTC)" } th scope="col" { span.sr-only { "Sign out" } } } }
                    tbody {
                        @for x in &live {
                            tr {
                                td { (at(x.created_at)) }
                                td { (x.ip.as_deref().unwrap_or("")) }
                                td { (x.user_agent.as_deref().unwrap_or("")) }
                                td { (at(x.expires_at)) }
                                td {
                                    form.inline method="post" action={ (base) "/sessions/revoke" } {
                                        (csrf_field(s))
                                        input type="hidden" name="session" value=(x.id);
                                        button type="submit" { "Sign out" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
            form.inline method="post" action={ (base) "/sessions/revoke" } {
                (csrf_field(s))
                button type="submit" { "Sign out everywhere" }
            }
        }
        h2 #delete-h { "Delete" }
        form.card method="post" action={ (base) "/delete" } aria-labelledby="delete-h" data-confirm={ "Delete " (user.username) "?" } {
            (csrf_field(s))
            p { "Deletes " (user.username) " with their API tokens, and signs out their sessions." }
            div.field {
                label { input type="checkbox" name="confirm" value="yes" required; " Yes, delete " (user.username) }
            }
            button.danger type="submit" { "Delete user" }
        }
    })
}

async fn find(dash: &Dash, id: &str) -> PageResult<User> {
    Ok(dash
        .app
        .store
        .get_user(id)
        .await?
        .ok_or_else(|| ApiError::not_found("user"))?)
}

pub async fn show(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    PagePath(id): PagePath<String>,
    Query(q): Query<HashMap<String, String>>,
) -> PageResult {
    let user = find(&dash, &id).await?;
    let markup = html! {
        @if let Some(m) = notice(&q) { div.notice role="status" { p { (m) } } }
        (body(&dash, &s, &user, None).await?)
    };
    Ok(page(Some(&s), &user.username, "users", markup).into_response())
}

/// Sends one field to `PATCH /users/{id}`; a refusal is shown on the page.
async fn patch(
    dash: &Dash,
    s: &Session,
    id: String,
    field: &str,
    value: &str,
    done: &str,
) -> PageResult {
    let user = find(dash, &id).await?;
    let mut fields = Map::new();
    fields.insert(field.into(), Value::String(value.to_owned()));
    let answer = api::update(
        axum::extract::State(dash.app.clone()),
        s.actor.clone(),
        PathParam(id.clone()),
        JsonObject(fields),
    )
    .await;
    match answer {
        Ok(_) => Ok(see_other(&format!("/users/{}?{done}=1", urlencode(&id)))),
        Err(e) if e.status.is_client_error() => {
            let markup = body(dash, s, &user, Some(&e)).await?;
            Ok((e.status, page(Some(s), &user.username, "users", markup)).into_response())
        }
        Err(e) => Err(e.into()),
    }
}

pub async fn role(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    PagePath(id): PagePath<String>,
    form: Form,
) -> PageResult {
    check_csrf(&s, &form)?;
    patch(&dash, &s, id, "role", form.get("role"), "role").await
}

pub async fn password(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    PagePath(id): PagePath<String>,
    form: Form,
) -> PageResult {
    check_csrf(&s, &form)?;
    patch(&dash, &s, id, "password", form.raw("password"), "password").await
}

pub async fn revoke(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    PagePath(id): PagePath<String>,
    form: Form,
) -> PageResult {
    check_csrf(&s, &form)?;
    find(&dash, &id).await?;
    let only = Some(form.get("session")).filter(|x| !x.is_empty());
    sessions::revoke(&dash.app, &s.actor, &id, only).await?;
    Ok(see_other(&format!(
        "/users/{}?signed-out=1",
        urlencode(&id)
    )))
}

pub async fn delete(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    PagePath(id): PagePath<String>,
    form: Form,
) -> PageResult {
    check_csrf(&s, &form)?;
    if form.get("confirm") != "yes" {
        return Ok(see_other(&format!("/users/{}", urlencode(&id))));
    }
    api::delete(State(dash.app.clone()), s.actor.clone(), PathParam(id)).await?;
    Ok(see_other("/users?deleted=1"))
}
