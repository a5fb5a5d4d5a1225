//! `/profiles?id=`: one person, looked up by userId or anonymousId (or
//! profile id) through the admin API's profile handler: identities, traits,
//! computed trait values, audiences and their newest events, a page at a
//! time.

use sluice_api::path_param::PathParam;
use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use chrono::{DateTime, Utc};
use maud::html;
use serde_json::Value;
use sluice_api::admin::extract::Params;
use sluice_api::admin::personas::profiles as api;

use crate::Dash;
use crate::layout::{PageResult, SignedIn, page, urlencode, when};
use crate::widgets::{api_error, compact, pretty};

/// Events per page.
const EVENTS_PAGE: u32 = 25;

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| a.iter().map(compact).collect())
        .unwrap_or_default()
}

pub async fn show(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    Params(q): Params,
) -> PageResult {
    let id = q.get("id").map_or("", |v| v.trim()).to_owned();
    let before = q.get("before").cloned().unwrap_or_default();
    let found = if id.is_empty() {
        None
    } else {
        let params = HashMap::from([
            ("limit".to_owned(), EVENTS_PAGE.to_string()),
            ("before".to_owned(), before.clone()),
        ]);
        Some(
            api::get(
                State(dash.app.clone()),
                PathParam(id.clone()),
                Params(params),
            )
            .await,
        )
    };
    let mut status = StatusCode::OK;
    let result = match found {
        None => html! {},
        Some(Err(e)) if e.status == StatusCode::NOT_FOUND => {
            status = e.status;
            html! { div.error #errors role="alert" tabindex="-1" { p { "No profile has the userId or anonymousId " code { (id) } "." } p.muted { "Code: " code { (e.code) } } } }
        }
        Some(Err(e)) if e.status.is_client_error() => {
            status = e.status;
            api_error(&e)
        }
        Some(Err(e)) => return Err(e.into()),
        Some(Ok(p)) => {
            let p = p.0;
            let traits = p["traits"].as_object().cloned().unwrap_or_default();
            let computed = p["computed_traits"]
                .as_object()
                .cloned()
                .unwrap_or_default();
            let audiences = p["audiences"].as_array().cloned().unwrap_or_default();
            let events = p["events"].as_array().cloned().unwrap_or_default();
            // Events name their source and show their time as every other
            // page does (a deleted source keeps its id).
            let sources = dash.app.store.list_sources().await?;
            let source_name = |sid: &str| {
                sources
                    .iter()
                    .find(|s| s.id == sid)
                    .map_or(sid.to_owned(), |s| s.name.clone())
            };
            let older = (events.len() == EVENTS_PAGE as usize)
                .then(|| events.last().and_then(|e| e["seq"].as_i64()))
                .flatten();
            html! {
                h2 { "Identities" }
                dl.facts #identities {
                    dt { "Profile" } dd { code { (p["id"].as_str().unwrap_or("")) } }
                    dt { "userIds" } dd { (strings(&p["user_ids"]).join(", ")) }
                    dt { "anonymousIds" } dd { (strings(&p["anonymous_ids"]).join(", ")) }
                }
                h2 { "Traits" }
                @if traits.is_empty() { p { "None (traits come from identify calls)." } } @else {
                    div.table-wrap { table #traits {
                        caption.sr-only { "Traits" }
                        thead { tr { th scope="col" { "Trait" } th scope="col" { "Value" } } }
                        tbody { @for (k, v) in &traits { tr { td { code { (k) } } td.wrap { code { (compact(v)) } } } } }
                    } }
                }
                h2 { "Computed traits" }
                @if computed.is_empty() { p { "None." } } @else {
                    div.table-wrap { table #computed {
                        caption.sr-only { "Computed traits" }
                        thead { tr { th scope="col" { "Key" } th scope="col" { "Value" } } }
                        tbody { @for (k, v) in &computed { tr { td { code { (k) } } td.wrap { code { (compact(v)) } } } } }
                    } }
                }
                h2 { "Audiences" }
                @if audiences.is_empty() { p { "None." } } @else {
                    ul #audiences { @for a in &audiences { li { a href={ "/audiences/" (a["id"].as_str().unwrap_or("")) } { (a["name"].as_str().unwrap_or("")) } " (" code { (a["key"].as_str().unwrap_or("")) } ")" } } }
                }
                h2 { "Newest events" }
                @if events.is_empty() { p { "None." } } @else {
                    ol.events #profile-events {
                        @for e in &events {
                            li { details {
                                summary {
                                    span.badge { (e["type"].as_str().unwrap_or("")) } " "
                                    span.what { (e["name"].as_str().unwrap_or("")) } " "
                                    span.muted {
                                        @match e["timestamp"].as_str().and_then(|t| DateTime::parse_from_rfc3339(t).ok()) {
                                            Some(t) => (when(&t.with_timezone(&Utc))),
                                            None => (e["timestamp"].as_str().unwrap_or("")),
                                        }
                                        " · " span.source { (source_name(e["source_id"].as_str().unwrap_or(""))) }
                                    }
                                }
                                pre.json { code { (pretty(&e["properties"])) } }
                            } }
                        }
                    }
                }
                @if let Some(o) = older {
                    p { a href={ "/profiles?id=" (urlencode(&id)) "&before=" (o) } { "Older events" } }
                }
            }
        }
    };
    let body = html! {
        form.filters method="get" action="/profiles" role="search" {
            div.field {
                label for="profile-id" { "userId or anonymousId" }
                input #profile-id name="id" value=(id) required;
            }
            button type="submit" { "Look up" }
        }
        p.help { "A profile joins a person's calls across every source: identify calls, anonymousIds merged with a userId, and aliases." }
        (result)
    };
    let title = if id.is_empty() {
        "Profiles".to_owned()
    } else {
        format!("Profile: {id}")
    };
    Ok((status, page(Some(&s), &title, "profiles", body)).into_response())
}
