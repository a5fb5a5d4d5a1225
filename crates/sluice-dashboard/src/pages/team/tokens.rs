//! `/tokens`: API tokens. A new token is shown once, on the page that
//! answers its creation, with a copy button; afterwards only its hint.

use std::sync::Arc;

use axum::extract::State;
use axum::response::IntoResponse;
use maud::{Markup, html};
use serde_json::{Map, Value};
use sluice_api::ApiError;
use sluice_api::admin::extract::JsonObject;
use sluice_api::admin::team::tokens as api;
use sluice_api::path_param::PathParam;
use sluice_store::Role;

use super::role_select;
use crate::Dash;
use crate::form::Form;
use crate::layout::{
    PagePath, PageResult, SignedIn, check_csrf, csrf_field, page, see_other, when,
};
use crate::session::Session;
use crate::widgets::api_error;

async fn body(dash: &Dash, s: &Session, error: Option<&ApiError>) -> PageResult<Markup> {
    let tokens = dash.app.store.list_api_tokens().await?;
    let users = dash.app.store.list_users().await?;
    let name_of = |id: &str| {
        users
            .iter()
            .find(|u| u.id == id)
            .map_or(id.to_owned(), |u| u.username.clone())
    };
    Ok(html! {
        p { "Tokens for scripts and services calling the admin API (" code { "Authorization: Bearer slu_…" } "). A token is shown once, when it is made; Sluice keeps only its hash. A token of a user acts with no more than the user's role, and goes with the user." }
        @if tokens.is_empty() {
            p #no-tokens { "No API tokens yet." }
        } @else {
            div.table-wrap {
                table #tokens {
                    caption.sr-only { "API tokens" }
                    thead { tr {
                        th scope="col" { "Name" } th scope="col" { "Role" } th scope="col" { "User" }
                        th scope="col" { "Token" } th scope="col" { "Created (UTC)" } th scope="col" { "Last used (UTC)" }
                        th scope="col" { span.sr-only { "Delete" } }
                    } }
                    tbody {
                        @for t in &tokens {
                            tr {
                                td { (t.name) }
                                td { (t.role) }
                                td { @match &t.user_id { Some(u) => (name_of(u)), None => span.muted { "automation" } } }
                                td { code { (t.token_hint) } }
                                td { (when(&t.created_at)) }
                                td { @match &t.last_used_at { Some(at) => (when(at)), None => span.muted { "never" } } }
                                td {
                                    form.inline method="post" action={ "/tokens/" (t.id) "/delete" } data-confirm={ "Delete the token " (t.name) "? It stops working at once." } {
                                        (csrf_field(s))
                                        button.danger type="submit" aria-label={ "Delete " (t.name) } { "Delete" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        h2 #new-token-h { "New API token" }
        form.card method="post" action="/tokens" aria-labelledby="new-token-h" {
            (csrf_field(s))
            @if let Some(e) = error { (api_error(e)) }
            div.field {
                label for="name" { "Name" }
                input #name name="name" required maxlength="200" aria-describedby="name-help";
                p.help #name-help { "What it is for: \"deploy pipeline\", \"alice's laptop\"." }
            }
            div.field { label for="role" { "Role" } (role_select("role", Role::Viewer)) }
            div.field {
                label for="user" { "User" }
                select #user name="user_id" {
                    option value="" { "None (automation)" }
                    @for u in &users { option value=(u.id) { (u.username) " (" (u.role) ")" } }
                }
            }
            button type="submit" { "Create token" }
        }
    })
}

pub async fn list(State(dash): State<Arc<Dash>>, SignedIn(s): SignedIn) -> PageResult {
    let markup = body(&dash, &s, None).await?;
    Ok(page(Some(&s), "API tokens", "tokens", markup).into_response())
}

pub async fn create(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    form: Form,
) -> PageResult {
    check_csrf(&s, &form)?;
    let mut fields = Map::new();
    for name in ["name", "role"] {
        fields.insert(name.into(), Value::String(form.get(name).to_owned()));
    }
    if !form.get("user_id").is_empty() {
        fields.insert(
            "user_id".into(),
            Value::String(form.get("user_id").to_owned()),
        );
    }
    match api::create(State(dash.app.clone()), s.actor.clone(), JsonObject(fields)).await {
        Ok((_, made)) => {
            let t = made.0;
            let secret = t.token.clone().unwrap_or_default();
            let markup = html! {
                div.notice role="status" {
                    p { "Token " strong { (t.name) } " created with the " (t.role) " role. Copy it now: it is not shown again." }
                }
                dl.facts {
                    dt { "API token" }
                    dd.copyable {
                        code #new-token { (secret) }
                        button.copy type="button" data-copy="new-token" hidden { "Copy token" }
                    }
                }
                p.help { "Send it as " code { "Authorization: Bearer <token>" } "." }
                p { a href="/tokens" { "Back to API tokens" } }
            };
            Ok(page(Some(&s), "Token created", "tokens", markup).into_response())
        }
        Err(e) if e.status.is_client_error() => {
            let markup = body(&dash, &s, Some(&e)).await?;
            Ok((e.status, page(Some(&s), "API tokens", "tokens", markup)).into_response())
        }
        Err(e) => Err(e.into()),
    }
}

pub async fn delete(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    PagePath(id): PagePath<String>,
    form: Form,
) -> PageResult {
    check_csrf(&s, &form)?;
    api::delete(State(dash.app.clone()), s.actor.clone(), PathParam(id)).await?;
    Ok(see_other("/tokens"))
}
