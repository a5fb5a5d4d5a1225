//! `/audit`: the audit log, newest first, filtered by actor, resource and
//! time (a form that sends `GET`, so a filtered view is a link), a page at
//! a time, each entry with what it changed.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::State;
use axum::response::IntoResponse;
use chrono::{NaiveDate, TimeZone, Utc};
use maud::{Markup, html};
use sluice_api::admin::extract::Params;
use sluice_api::admin::team::audit::{AuditView, page as entries, query};

use crate::Dash;
use crate::layout::{PageResult, SignedIn, page, urlencode, when};
use crate::widgets::pretty;

/// The resources the filter offers.
const RESOURCES: &[&str] = &[
    "source",
    "destination",
    "destination_filters",
    "source_rules",
    "computed_trait",
    "audience",
    "delivery",
    "regulation",
    "user",
    "token",
    "session",
];

/// Entries per page.
const PER_PAGE: u32 = 50;

/// The API's query parameters from the form's: dates (`YYYY-MM-DD`, UTC)
/// become times, `to` inclusive of its whole day.
fn api_params(q: &HashMap<String, String>) -> HashMap<String, String> {
    let mut out = HashMap::new();
    for key in ["actor", "resource", "before"] {
        if let Some(v) = q.get(key).map(|v| v.trim()).filter(|v| !v.is_empty()) {
            out.insert(key.to_owned(), v.to_owned());
        }
    }
    let day = |key: &str, days_after: i64| {
        let d = NaiveDate::parse_from_str(q.get(key)?.trim(), "%Y-%m-%d").ok()?;
        let t =
            Utc.from_utc_datetime(&d.and_hms_opt(0, 0, 0)?) + chrono::Duration::days(days_after);
        Some(t.to_rfc3339())
    };
    if let Some(t) = day("from", 0) {
        out.insert("since".into(), t);
    }
    if let Some(t) = day("to", 1) {
        out.insert("until".into(), t);
    }
    out.insert("limit".into(), PER_PAGE.to_string());
    out
}

/// The link to the page after `before`, keeping the filters.
fn older(q: &HashMap<String, String>, before: i64) -> String {
    let mut parts: Vec<String> = ["actor", "resource", "from", "to"]
        .iter()
        .filter_map(|k| {
            q.get(*k)
                .filter(|v| !v.is_empty())
                .map(|v| format!("{k}={}", urlencode(v)))
        })
        .collect();
    parts.push(format!("before={before}"));
    format!("/audit?{}", parts.join("&"))
}

fn entry_row(e: &AuditView) -> Markup {
    html! {
        tr {
            td { (when(&e.at)) }
            td { (e.actor.name) br; span.muted { (e.actor.kind.replace('_', " ")) } }
            td { (e.via) }
            td { (e.resource.replace('_', " ")) @if let Some(id) = &e.resource_id { br; code { (id) } } }
            td {
                (e.action)
                @if !e.confirmed { br; span.pill.pending title="Recorded before the change; its outcome was not confirmed" { "unconfirmed" } }
            }
            td { (e.ip.as_deref().unwrap_or("")) br; span.muted.ua { (e.user_agent.as_deref().unwrap_or("")) } }
            td {
                @if e.before.is_some() || e.after.is_some() {
                    details {
                        summary { "Changes" }
                        @if let Some(b) = &e.before { h3 { "Before" } pre { code { (pretty(b)) } } }
                        @if let Some(a) = &e.after { h3 { "After" } pre { code { (pretty(a)) } } }
                    }
                }
            }
        }
    }
}

pub async fn show(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    axum::extract::Query(q): axum::extract::Query<HashMap<String, String>>,
) -> PageResult {
    let shown = |k: &str| q.get(k).cloned().unwrap_or_default();
    let (list, error) = match query(&Params(api_params(&q))) {
        Ok(query) => (Some(entries(&dash.app, query).await?), None),
        Err(e) => (None, Some(e)),
    };
    let body = html! {
        p { "Every change made through the admin API, this dashboard or the command line: who, when, from where, and the resource before and after (secrets masked). Sign-ins and sign-outs are here too." }
        form.filters method="get" action="/audit" role="search" aria-label="Filter the audit log" {
            div.field { label for="actor" { "Actor" } input #actor name="actor" value=(shown("actor")) placeholder="username, token name or admin token"; }
            div.field {
                label for="resource" { "Resource" }
                select #resource name="resource" {
                    option value="" { "Any" }
                    @for r in RESOURCES { option value=(r) selected[shown("resource") == *r] { (r.replace('_', " ")) } }
                }
            }
            div.field { label for="from" { "From (UTC)" } input #from type="date" name="from" value=(shown("from")); }
            div.field { label for="to" { "To (UTC)" } input #to type="date" name="to" value=(shown("to")); }
            button type="submit" { "Filter" }
        }
        @if let Some(e) = &error { (crate::widgets::api_error(e)) }
        @if let Some(list) = &list {
            @if list.data.is_empty() {
                p #no-entries { "No entries." }
            } @else {
                div.table-wrap {
                    table #audit {
                        caption.sr-only { "Audit log, newest first" }
                        thead { tr {
                            th scope="col" { "When (UTC)" } th scope="col" { "Who" } th scope="col" { "Via" }
                            th scope="col" { "Resource" } th scope="col" { "Action" } th scope="col" { "From" } th scope="col" { "What" }
                        } }
                        tbody { @for e in &list.data { (entry_row(e)) } }
                    }
                }
                @if let Some(next) = list.next_before {
                    p { a #older href=(older(&q, next)) { "Older entries" } }
                }
            }
        }
    };
    Ok(page(Some(&s), "Audit log", "audit", body).into_response())
}
