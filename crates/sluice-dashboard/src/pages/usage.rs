//! `/usage?source=`: API calls and events per UTC day for one source over
//! the last 30 days, as a chart and a table. Counted at ingest, before any
//! filtering (the admin API's `/sources/{id}/usage`).

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::response::IntoResponse;
use chrono::{Duration, Utc};
use maud::html;
use sluice_api::ApiError;

use crate::Dash;
use crate::chart::{Series, bars};
use crate::layout::{PageResult, SignedIn, page};

const DAYS: i64 = 30;

pub async fn show(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    Query(q): Query<HashMap<String, String>>,
) -> PageResult {
    let sources = dash.app.store.list_sources().await?;
    let chosen = match q.get("source").filter(|v| !v.is_empty()) {
        Some(id) => Some(
            sources
                .iter()
                .find(|src| &src.id == id)
                .ok_or_else(|| ApiError::not_found("source"))?,
        ),
        None => sources.first(),
    };
    let today = Utc::now().date_naive();
    let days: Vec<String> = (0..DAYS)
        .rev()
        .map(|back| (today - Duration::days(back)).to_string())
        .collect();
    let counts = match chosen {
        Some(src) => {
            let from = days.first().cloned().unwrap_or_default();
            dash.app
                .store
                .usage(&src.id, &from, &today.to_string())
                .await?
        }
        None => Vec::new(),
    };
    let by_day: HashMap<&str, (u64, u64)> = counts
        .iter()
        .map(|u| (u.day.as_str(), (u.api_calls, u.events)))
        .collect();
    let calls: Vec<u64> = days
        .iter()
        .map(|d| by_day.get(d.as_str()).map_or(0, |c| c.0))
        .collect();
    let events: Vec<u64> = days
        .iter()
        .map(|d| by_day.get(d.as_str()).map_or(0, |c| c.1))
        .collect();
    let labels: Vec<String> = days.iter().map(|d| d[5..].to_owned()).collect();
    let body = html! {
        @if sources.is_empty() {
            p { "No sources yet. " a href="/sources" { "Create one" } "." }
        } @else {
            form.inline method="get" action="/usage" {
                label for="source" { "Source" }
                select #source name="source" {
                    @for src in &sources {
                        option value=(src.id) selected[chosen.is_some_and(|c| c.id == src.id)] { (src.name) }
                    }
                }
                button type="submit" { "Show" }
            }
            @if let Some(src) = chosen {
                h2 { (src.name) ": last " (DAYS) " days (UTC)" }
                (bars(&format!("API calls and events per day for {}", src.name), &labels, &[
                    Series { label: "API calls", class: "s-calls", values: calls.clone() },
                    Series { label: "events", class: "s-ok", values: events.clone() },
                ]))
                div.table-wrap {
                    table {
                        caption { "Per day, newest first. Counted when received, before any filtering." }
                        thead { tr { th scope="col" { "Day" } th scope="col" .num { "API calls" } th scope="col" .num { "Events" } } }
                        tbody {
                            @for i in (0..days.len()).rev() {
                                tr { td { (days[i]) } td.num { (calls[i]) } td.num { (events[i]) } }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(page(Some(&s), "Usage", "usage", body).into_response())
}
