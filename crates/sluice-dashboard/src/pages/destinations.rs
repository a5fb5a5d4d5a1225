//! `/destinations`: the list, a destination's page and its on/off switch.
//! The page shows the settings as the admin API does: URLs and headers in
//! full, the shared secret only as its first characters.

use sluice_api::path_param::PathParam;
use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::response::IntoResponse;
use maud::html;
use serde_json::{Map, Value};
use sluice_api::admin::destinations as api;
use sluice_api::admin::extract::JsonObject;
use sluice_outbound::mask::mask_url;

use crate::Dash;
use crate::form::Form;
use crate::layout::{
    PagePath, PageResult, SignedIn, check_csrf, csrf_field, page, see_other, when,
};
use crate::widgets::{list_page, pager};

pub async fn list(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    Query(q): Query<HashMap<String, String>>,
) -> PageResult {
    let all = dash.app.store.list_destinations().await?;
    let list = list_page(all, |d| d.id.as_str(), &q)?;
    let all = &list.data;
    let body = html! {
        @if q.contains_key("deleted") {
            div.notice role="status" { p { "Destination deleted." } }
        }
        p.actions { a.button href="/catalog" { "Add a destination" } }
        @if all.is_empty() {
            p { "No destinations yet. Choose one in the " a href="/catalog" { "catalog" } "." }
        } @else {
            div.table-wrap {
                table {
                    caption.sr-only { "Destinations" }
                    thead { tr { th scope="col" { "Name" } th scope="col" { "Type" } th scope="col" { "State" } th scope="col" .num { "URLs" } th scope="col" .num { "Sources" } th scope="col" { "Log" } } }
                    tbody {
                        @for d in all {
                            tr {
                                td { a href={ "/destinations/" (d.id) } { (d.name) } }
                                td { (d.kind) }
                                td { span class={ "pill " @if d.enabled { "on" } @else { "off" } } { @if d.enabled { "On" } @else { "Off" } } }
                                td.num { (d.settings.urls.len()) }
                                td.num { (d.source_ids.len()) }
                                td { a href={ "/destinations/" (d.id) "/deliveries" } { "Deliveries" } }
                            }
                        }
                    }
                }
            }
        }
    };
    let body = html! { (body) (pager("/destinations", &list, &q)) };
    Ok(page(Some(&s), "Destinations", "destinations", body).into_response())
}

pub async fn show(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    PagePath(id): PagePath<String>,
    Query(q): Query<HashMap<String, String>>,
) -> PageResult {
    let d = dash
        .app
        .store
        .get_destination(&id)
        .await?
        .ok_or_else(|| sluice_api::ApiError::not_found("destination"))?;
    let view = api::view(&d, &dash.app.outbound.masker);
    let sources = dash.app.store.list_sources().await?;
    let names: HashMap<&str, &str> = sources
        .iter()
        .map(|src| (src.id.as_str(), src.name.as_str()))
        .collect();
    let secret = view.settings.shared_secret.as_deref();
    let standard = view.settings.standard_webhooks;
    let masker = &dash.app.outbound.masker;
    let filters =
        sluice_api::admin::schema::get_filters(State(dash.app.clone()), PathParam(id.clone()))
            .await?
            .0;
    let failing: Vec<_> = (dash.app.incidents)()
        .into_iter()
        .filter(|i| i.destination_id == id)
        .collect();
    let body = html! {
        (super::incidents::notice(&failing))
        @if q.contains_key("created") {
            div.notice role="status" { p { "Destination saved. It is switched off: check the settings below, then switch it on." } }
        }
        @if q.contains_key("updated") {
            div.notice role="status" { p { "Settings saved." } }
        }
        @if q.contains_key("filtered") {
            div.notice role="status" { p { "Filters saved. They apply to calls accepted from now on." } }
        }
        section.switch aria-labelledby="state-h" {
            h2 #state-h { "State" }
            form method="post" action={ "/destinations/" (id) "/enabled" } {
                (csrf_field(&s))
                p {
                    span #state class={ "pill " @if d.enabled { "on" } @else { "off" } } { @if d.enabled { "On" } @else { "Off" } }
                    " "
                    @if d.enabled {
                        "Calls of the connected sources are forwarded. "
                        input type="hidden" name="enabled" value="false";
                        button.secondary type="submit" { "Switch off" }
                    } @else {
                        "Nothing is forwarded. "
                        input type="hidden" name="enabled" value="true";
                        button type="submit" { "Switch on" }
                    }
                }
            }
        }
        h2 { "Webhook URLs" }
        @if d.settings.urls.is_empty() {
            p { "No URLs: nothing can be delivered." }
        } @else {
            ol.urls {
                @for u in &d.settings.urls {
                    li {
                        code.url { (mask_url(&u.url)) }
                        @if !u.headers.is_empty() {
                            ul.headers { @for (k, v) in &u.headers { li { code { (k) ": " (masker.header_value(k, v)) } } } }
                        }
                    }
                }
            }
        }
        p.actions { a.button.secondary href={ "/destinations/" (id) "/edit" } { "Edit settings" } }
        dl.facts {
            dt { "Shared secret" }
            dd { @match secret {
                Some(h) => { code #secret-hint { (h) } " (only the first characters are shown); requests carry X-Signature." }
                None if standard.is_some() => { "None: requests carry no X-Signature." }
                None => { "None: requests are not signed." }
            } }
            @if let Some(sw) = &standard {
                dt { "Standard Webhooks" }
                dd #standard-webhooks {
                    "On: requests carry webhook-id, webhook-timestamp and webhook-signature, signed with "
                    code { (sw.secret) }
                    @if let Some(until) = &sw.previous_secret_valid_until { " (the previous secret also signs until " (until) ")" }
                    ". Change it on " a href={ "/destinations/" (id) "/edit" } { "Edit settings" } "."
                }
            }
            @if d.settings.ca_bundle.is_some() {
                dt { "Private CA bundle" }
                dd #ca-bundle { "Set: its certificates are trusted for this destination's https URLs beside the system's roots." }
            }
            dt { "Connected sources" }
            dd {
                @if d.source_ids.is_empty() { "None." }
                ul.plain { @for sid in &d.source_ids { li { a href={ "/sources/" (sid) } { (names.get(sid.as_str()).copied().unwrap_or(sid)) } } } }
            }
            dt { "Updated" } dd { (when(&d.updated_at)) }
        }
        h2 { "Send a test event" }
        form.card method="post" action={ "/destinations/" (id) "/test" } {
            (csrf_field(&s))
            p { "Sends a track call named " code { "Sluice Test Event" } " through the real pipeline (stored for the first connected source, delivered and signed like any other call) and shows what the URLs answered." }
            @if !d.enabled { p.help { "The destination is off: switch it on first, or the test delivery is discarded unsent." } }
            button type="submit" { "Send a test event" }
        }
        p.actions { a.button.secondary href={ "/destinations/" (id) "/deliveries" } { "Delivery log" } }
        (super::filters::section(&s, &id, &filters))
        h2 #delete-h { "Delete this destination" }
        form.card method="post" action={ "/destinations/" (id) "/delete" } {
            (csrf_field(&s))
            p { "Its pending deliveries are discarded and its filters deleted; the next page says exactly what goes and asks you to confirm." }
            button.danger type="submit" { "Delete destination…" }
        }
    };
    Ok(page(Some(&s), &d.name, "destinations", body).into_response())
}

pub async fn switch(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    PagePath(id): PagePath<String>,
    form: Form,
) -> PageResult {
    check_csrf(&s, &form)?;
    let mut body = Map::new();
    body.insert("enabled".into(), Value::Bool(form.get("enabled") == "true"));
    let _updated = api::update(
        State(dash.app.clone()),
        s.actor.clone(),
        PathParam(id.clone()),
        JsonObject(body),
    )
    .await?;
    Ok(see_other(&format!("/destinations/{id}")))
}
