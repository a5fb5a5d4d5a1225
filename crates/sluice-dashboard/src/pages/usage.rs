//! `/usage?source=`: API calls, events, blocked and suppressed calls per UTC
//! day for one source over the last 30 days, as a chart and a table, read
//! through the admin API's usage handler (`/sources/{id}/usage`). Calls and
//! events are counted at ingest before any filtering, so blocked calls are
//! in `events` too; suppressed calls are not stored and not in `events`.

use sluice_api::path_param::PathParam;
use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::response::IntoResponse;
use chrono::{Duration, Utc};
use maud::html;
use sluice_api::ApiError;
use sluice_api::admin::extract::Params;

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
            let params = HashMap::from([
                ("from".to_owned(), from),
                ("to".to_owned(), today.to_string()),
            ]);
            let out = sluice_api::admin::sources::usage(
                State(dash.app.clone()),
                PathParam(src.id.clone()),
                Params(params),
            )
            .await?
            .0;
            out.data
                .iter()
                .filter_map(|u| serde_json::to_value(u).ok())
                .collect()
        }
        None => Vec::new(),
    };
    let by_day: HashMap<&str, &serde_json::Value> = counts
        .iter()
        .filter_map(|u| u["day"].as_str().map(|d| (d, u)))
        .collect();
    let column = |key: &str| -> Vec<u64> {
        days.iter()
            .map(|d| {
                by_day
                    .get(d.as_str())
                    .and_then(|u| u[key].as_u64())
                    .unwrap_or(0)
            })
            .collect()
    };
    let calls = column("api_calls");
    let events = column("events");
    let blocked = column("blocked");
    let suppressed = column("suppressed");
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
                (bars(&format!("API calls, events, blocked and suppressed calls per day for {}", src.name), &labels, &[
                    Series { label: "API calls", class: "s-calls", values: calls.clone() },
                    Series { label: "events", class: "s-ok", values: events.clone() },
                    Series { label: "blocked", class: "s-blocked", values: blocked.clone() },
                    Series { label: "suppressed", class: "s-suppressed", values: suppressed.clone() },
                ]))
                div.table-wrap {
                    table {
                        caption { "Per day, newest first. Counted when received, before any filtering: blocked calls are stored and counted in Events too; suppressed calls are dropped unstored and counted only under Suppressed." }
                        thead { tr {
                            th scope="col" { "Day" } th scope="col" .num { "API calls" } th scope="col" .num { "Events" }
                            th scope="col" .num { "Blocked" } th scope="col" .num { "Suppressed" }
                        } }
                        tbody {
                            @for i in (0..days.len()).rev() {
                                tr {
                                    td { (days[i]) } td.num { (calls[i]) } td.num { (events[i]) }
                                    td.num { (blocked[i]) } td.num { (suppressed[i]) }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(page(Some(&s), "Usage", "usage", body).into_response())
}
