//! Renaming, disabling, enabling and deleting a source, and deleting a
//! destination. Each is two posts: the first (from the source's or the
//! destination's page) answers a confirmation page that says what goes
//! with the change; the second, from that page, carries `confirm=yes` and
//! makes the change through the admin API's handlers. No script is needed,
//! and a confirmation page reloaded only shows itself again.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use maud::{Markup, html};
use serde_json::{Map, Value};
use sluice_api::admin::extract::{JsonObject, required_name};
use sluice_api::admin::{destinations as dest_api, sources as src_api};
use sluice_api::path_param::PathParam;
use sluice_api::{ApiError, AppState};
use sluice_store::{DeliveryFilter, DeliveryState};

use crate::Dash;
use crate::form::Form;
use crate::layout::{PagePath, PageResult, SignedIn, check_csrf, csrf_field, page, see_other};
use crate::session::Session;

/// At most this many pending deliveries are counted for the warning.
const PENDING_COUNTED: u32 = 1000;

/// A confirmation page: what will happen, then a form that repeats
/// `fields` with `confirm=yes`, and a way back.
struct Confirm<'a> {
    title: &'a str,
    active: &'a str,
    action: String,
    fields: Vec<(&'a str, String)>,
    consequences: Markup,
    button: &'a str,
    danger: bool,
    back: String,
}

fn confirm_page(s: &Session, c: Confirm<'_>) -> axum::response::Response {
    let body = html! {
        div.notice #consequences role="status" { (c.consequences) }
        form.card method="post" action=(c.action) {
            (csrf_field(s))
            @for (name, value) in &c.fields { input type="hidden" name=(name) value=(value); }
            input type="hidden" name="confirm" value="yes";
            p.actions {
                @if c.danger { button.danger type="submit" { (c.button) } }
                @else { button type="submit" { (c.button) } }
                " "
                a.button.secondary href=(c.back) { "Cancel" }
            }
        }
    };
    page(Some(s), c.title, c.active, body).into_response()
}

fn confirmed(form: &Form) -> bool {
    form.get("confirm") == "yes"
}

/// The names of the destinations `source_id` is connected to.
async fn connected(app: &AppState, source_id: &str) -> PageResult<Vec<String>> {
    Ok(app
        .store
        .list_destinations()
        .await?
        .into_iter()
        .filter(|d| d.source_ids.iter().any(|s| s == source_id))
        .map(|d| d.name)
        .collect())
}

fn names(list: &[String]) -> Markup {
    html! { @for (i, n) in list.iter().enumerate() { @if i > 0 { ", " } strong { (n) } } }
}

/// `POST /sources/{id}/rename`.
pub async fn rename_source(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    PagePath(id): PagePath<String>,
    form: Form,
) -> PageResult {
    check_csrf(&s, &form)?;
    let src = src_api::get(State(dash.app.clone()), PathParam(id.clone()))
        .await?
        .0;
    let mut body = Map::new();
    body.insert("name".into(), Value::String(form.get("name").to_owned()));
    let name = match required_name(&body, "name") {
        Ok(name) => name,
        Err(e) => return Ok(rename_refused(&s, &id, &src.name, form.get("name"), &e)),
    };
    if !confirmed(&form) {
        let consequences = html! {
            p { "Rename the source " strong { (src.name) } " to " strong { (name) } "?" }
            p { "Only the name changes: its id, write key, events, deliveries, schema, rules and connections stay as they are." }
        };
        return Ok(confirm_page(
            &s,
            Confirm {
                title: "Rename this source?",
                active: "sources",
                action: format!("/sources/{id}/rename"),
                fields: vec![("name", name)],
                consequences,
                button: "Rename source",
                danger: false,
                back: format!("/sources/{id}"),
            },
        ));
    }
    match src_api::update(
        State(dash.app.clone()),
        s.actor.clone(),
        PathParam(id.clone()),
        JsonObject(body),
    )
    .await
    {
        Ok(_) => Ok(see_other(&format!("/sources/{id}?renamed=1"))),
        Err(e) if e.status == StatusCode::BAD_REQUEST => {
            Ok(rename_refused(&s, &id, &src.name, form.get("name"), &e))
        }
        Err(e) => Err(e.into()),
    }
}

/// The rename form again, with the API's refusal on its field.
fn rename_refused(
    s: &Session,
    id: &str,
    current: &str,
    typed: &str,
    e: &ApiError,
) -> axum::response::Response {
    let body = html! {
        form.card method="post" action={ "/sources/" (id) "/rename" } {
            (csrf_field(s))
            div.field {
                label for="name" { "New name" }
                input #name name="name" value=(typed) required maxlength="200"
                    aria-invalid="true" aria-describedby="name-error";
                p #name-error .field-error role="alert" { (e.message) }
            }
            p.actions {
                button type="submit" { "Rename source" }
                " "
                a.button.secondary href={ "/sources/" (id) } { "Cancel" }
            }
        }
    };
    let title = format!("Rename {current}");
    (e.status, page(Some(s), &title, "sources", body)).into_response()
}

/// `POST /sources/{id}/enabled`: `enabled=true|false`.
pub async fn switch_source(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    PagePath(id): PagePath<String>,
    form: Form,
) -> PageResult {
    check_csrf(&s, &form)?;
    let src = src_api::get(State(dash.app.clone()), PathParam(id.clone()))
        .await?
        .0;
    let enable = form.get("enabled") == "true";
    if !confirmed(&form) {
        let consequences = if enable {
            html! {
                p { "Enable the source " strong { (src.name) } "?" }
                p { "Calls sent with its write key are accepted again and forwarded to its connected destinations." }
            }
        } else {
            let dests = connected(&dash.app, &id).await?;
            html! {
                p { "Disable the source " strong { (src.name) } "?" }
                p { "Calls sent with its write key are refused (" code { "401 source is disabled" } ") and not stored: they are lost unless the sender keeps them and retries." }
                p { "Its events and deliveries already stored are kept, its write key stays the same, and "
                    @if dests.is_empty() { "it stays connected to no destination" }
                    @else { "it stays connected to " (names(&dests)) }
                    ". Enable it again at any time." }
            }
        };
        return Ok(confirm_page(
            &s,
            Confirm {
                title: if enable {
                    "Enable this source?"
                } else {
                    "Disable this source?"
                },
                active: "sources",
                action: format!("/sources/{id}/enabled"),
                fields: vec![("enabled", enable.to_string())],
                consequences,
                button: if enable {
                    "Enable source"
                } else {
                    "Disable source"
                },
                danger: !enable,
                back: format!("/sources/{id}"),
            },
        ));
    }
    let mut body = Map::new();
    body.insert("enabled".into(), Value::Bool(enable));
    let _updated = src_api::update(
        State(dash.app.clone()),
        s.actor.clone(),
        PathParam(id.clone()),
        JsonObject(body),
    )
    .await?;
    Ok(see_other(&format!("/sources/{id}")))
}

/// `POST /sources/{id}/delete`.
pub async fn delete_source(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    PagePath(id): PagePath<String>,
    form: Form,
) -> PageResult {
    check_csrf(&s, &form)?;
    let src = src_api::get(State(dash.app.clone()), PathParam(id.clone()))
        .await?
        .0;
    if !confirmed(&form) {
        let dests = connected(&dash.app, &id).await?;
        let consequences = html! {
            p { "Delete the source " strong { (src.name) } "? This cannot be undone." }
            ul {
                li { "Its write key stops working at once: calls sent with it get " code { "401" } " and are not stored." }
                @if !dests.is_empty() {
                    li { "It is disconnected from " (names(&dests)) "; the destinations themselves stay." }
                }
                li { "Its schema, block rules, tracking plan and usage counts are deleted." }
                li { "Its events and their deliveries already stored stay until retention removes them." }
            }
        };
        return Ok(confirm_page(
            &s,
            Confirm {
                title: "Delete this source?",
                active: "sources",
                action: format!("/sources/{id}/delete"),
                fields: Vec::new(),
                consequences,
                button: "Delete source",
                danger: true,
                back: format!("/sources/{id}"),
            },
        ));
    }
    src_api::delete(State(dash.app.clone()), s.actor.clone(), PathParam(id)).await?;
    Ok(see_other("/sources?deleted=1"))
}

/// `POST /destinations/{id}/delete`.
pub async fn delete_destination(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    PagePath(id): PagePath<String>,
    form: Form,
) -> PageResult {
    check_csrf(&s, &form)?;
    let d = dash
        .app
        .store
        .get_destination(&id)
        .await?
        .ok_or_else(|| ApiError::not_found("destination"))?;
    if !confirmed(&form) {
        let pending = dash
            .app
            .store
            .list_deliveries(&DeliveryFilter {
                destination_id: Some(id.clone()),
                state: Some(DeliveryState::Pending),
                limit: PENDING_COUNTED,
                ..DeliveryFilter::default()
            })
            .await?
            .len();
        let computations: Vec<String> = dash
            .app
            .store
            .list_computations()
            .await?
            .into_iter()
            .filter(|c| c.destination_ids.contains(&id))
            .map(|c| c.name)
            .collect();
        let more = if pending as u32 >= PENDING_COUNTED {
            "at least "
        } else {
            ""
        };
        let consequences = html! {
            p { "Delete the destination " strong { (d.name) } "? This cannot be undone." }
            ul {
                li #pending-note {
                    @if pending == 0 { "No delivery is waiting to be sent." }
                    @else if pending == 1 { "Its 1 pending delivery is discarded, never sent." }
                    @else { "Its " (more) (pending) " pending deliveries are discarded, never sent." }
                }
                li { "Its filters are deleted, and its delivery log is no longer shown here." }
                @if !computations.is_empty() {
                    li { "The computed traits and audiences " (names(&computations)) " stop sending to it." }
                }
                li { "Its sources and their events stay." }
            }
        };
        return Ok(confirm_page(
            &s,
            Confirm {
                title: "Delete this destination?",
                active: "destinations",
                action: format!("/destinations/{id}/delete"),
                fields: Vec::new(),
                consequences,
                button: "Delete destination",
                danger: true,
                back: format!("/destinations/{id}"),
            },
        ));
    }
    dest_api::delete(State(dash.app.clone()), s.actor.clone(), PathParam(id)).await?;
    Ok(see_other("/destinations?deleted=1"))
}
