//! `/users`: every user, and the form that adds one.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use maud::{Markup, html};
use serde_json::{Map, Value};
use sluice_api::ApiError;
use sluice_api::admin::extract::JsonObject;
use sluice_api::admin::team::users as api;
use sluice_store::Role;

use super::role_select;
use crate::Dash;
use crate::form::Form;
use crate::layout::{
    PageResult, SignedIn, check_csrf, csrf_field, page, see_other, urlencode, when,
};
use crate::session::Session;
use crate::widgets::api_error;

async fn body(
    dash: &Dash,
    s: &Session,
    draft: (&str, Role),
    error: Option<&ApiError>,
) -> PageResult<Markup> {
    let users = dash.app.store.list_users().await?;
    let (username, role) = draft;
    Ok(html! {
        p { "People who sign in with a username and password. Each has a role: viewers read, editors also change sources, destinations, filters and Personas, admins also manage users, API tokens, regulations and read the " a href="/audit" { "audit log" } ". Scripts use " a href="/tokens" { "API tokens" } "." }
        @if users.is_empty() {
            p #no-users { "No users yet: only the admin token signs in." }
        } @else {
            div.table-wrap {
                table #users {
                    caption.sr-only { "Users" }
                    thead { tr { th scope="col" { "Username" } th scope="col" { "Role" } th scope="col" { "Created (UTC)" } } }
                    tbody {
                        @for u in &users {
                            tr {
                                td { a href={ "/users/" (urlencode(&u.id)) } { (u.username) } }
                                td { (u.role) }
                                td { (when(&u.created_at)) }
                            }
                        }
                    }
                }
            }
        }
        h2 #new-user-h { "New user" }
        form.card method="post" action="/users" aria-labelledby="new-user-h" {
            (csrf_field(s))
            @if let Some(e) = error { (api_error(e)) }
            div.field {
                label for="username" { "Username" }
                input #username name="username" value=(username) required maxlength="64" autocomplete="off" aria-describedby="username-help";
                p.help #username-help { "Letters, digits and . _ @ + - (an email address works); case does not matter." }
            }
            div.field {
                label for="role" { "Role" }
                (role_select("role", role))
            }
            div.field {
                label for="password" { "Password" }
                input #password type="password" name="password" required minlength="12" autocomplete="new-password" aria-describedby="password-help";
                p.help #password-help { "At least 12 characters. Give it to the person by a safe channel." }
            }
            button type="submit" { "Add user" }
        }
    })
}

pub async fn list(State(dash): State<Arc<Dash>>, SignedIn(s): SignedIn) -> PageResult {
    let markup = body(&dash, &s, ("", Role::Viewer), None).await?;
    Ok(page(Some(&s), "Users", "users", markup).into_response())
}

pub async fn create(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    form: Form,
) -> PageResult {
    check_csrf(&s, &form)?;
    let mut fields = Map::new();
    for name in ["username", "role"] {
        fields.insert(name.into(), Value::String(form.get(name).to_owned()));
    }
    fields.insert(
        "password".into(),
        Value::String(form.raw("password").to_owned()),
    );
    match api::create(State(dash.app.clone()), s.actor.clone(), JsonObject(fields)).await {
        Ok((_, user)) => Ok(see_other(&format!(
            "/users/{}?created=1",
            urlencode(&user.0.id)
        ))),
        Err(e) if e.status.is_client_error() => {
            let role = Role::parse(form.get("role")).unwrap_or(Role::Viewer);
            let markup = body(&dash, &s, (form.get("username"), role), Some(&e)).await?;
            let status = if e.status == StatusCode::CONFLICT {
                StatusCode::CONFLICT
            } else {
                StatusCode::BAD_REQUEST
            };
            Ok((status, page(Some(&s), "Users", "users", markup)).into_response())
        }
        Err(e) => Err(e.into()),
    }
}
