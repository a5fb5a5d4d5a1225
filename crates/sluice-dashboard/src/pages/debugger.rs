//! `/sources/{id}/debugger`: a source's calls as stored after enrichment,
//! newest first, one page at a time; each expands to its JSON. On the first
//! page the script asks `newer?after=<seq>` every two seconds and puts what
//! arrived on top (short poll: no connection held open per viewer).

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::header;
use axum::response::IntoResponse;
use maud::{Markup, html};
use serde_json::Value;
use sluice_api::ApiError;
use sluice_store::StoredEvent;

use crate::Dash;
use crate::layout::{PagePath, PageResult, SignedIn, page, see_other, when};

/// Events per page.
pub const PAGE: u32 = 25;

fn summary(event: &Value) -> String {
    let s = |k: &str| event[k].as_str().map(str::to_owned);
    s("event")
        .or_else(|| s("name"))
        .or_else(|| s("userId").map(|u| format!("userId {u}")))
        .or_else(|| s("anonymousId").map(|u| format!("anonymousId {u}")))
        .unwrap_or_default()
}

fn row(e: &StoredEvent) -> Markup {
    let parsed: Value = serde_json::from_str(&e.body).unwrap_or(Value::Null);
    let pretty = serde_json::to_string_pretty(&parsed).unwrap_or_else(|_| e.body.clone());
    html! {
        li data-seq=(e.seq) .blocked[e.blocked.is_some()] {
            details {
                summary {
                    span.badge { (e.event_type) }
                    @if let Some(rule) = &e.blocked {
                        " " span.pill.dead title="Stored, sent to no destination" { "Blocked by " (rule) }
                    }
                    " " span.what { (summary(&parsed)) }
                    " " span.muted { (when(&e.received_at)) }
                }
                p.muted { "messageId " code { (e.message_id) } }
                @if let Some(rule) = &e.blocked {
                    p.muted { "Blocked by the source's " code { (rule) } " rule: stored, but no destination gets it. " }
                }
                pre.json { code { (pretty) } }
            }
        }
    }
}

/// `/debugger`: the only source's debugger, or a choice of source.
pub async fn choose(State(dash): State<Arc<Dash>>, SignedIn(s): SignedIn) -> PageResult {
    let sources = dash.app.store.list_sources().await?;
    if let [only] = sources.as_slice() {
        return Ok(see_other(&format!("/sources/{}/debugger", only.id)));
    }
    let body = html! {
        @if sources.is_empty() {
            p { "No sources yet. " a href="/sources" { "Create one" } " and its calls appear here." }
        } @else {
            p { "Choose the source to watch:" }
            ul { @for src in &sources { li { a href={ "/sources/" (src.id) "/debugger" } { (src.name) } } } }
        }
    };
    Ok(page(Some(&s), "Live debugger", "debugger", body).into_response())
}

pub async fn show(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    PagePath(id): PagePath<String>,
    Query(q): Query<HashMap<String, String>>,
) -> PageResult {
    let source = dash
        .app
        .store
        .get_source(&id)
        .await?
        .ok_or_else(|| ApiError::not_found("source"))?;
    let before =
        match q.get("before").filter(|b| !b.is_empty()) {
            None => None,
            Some(b) => Some(b.parse::<i64>().map_err(|_| {
                ApiError::bad_request("invalid_query", "before: must be an integer")
            })?),
        };
    let events = dash.app.store.recent_events(&id, before, PAGE).await?;
    let newest = events.first().map_or(0, |e| e.seq);
    let older = (events.len() == PAGE as usize)
        .then(|| events.last().map(|e| e.seq))
        .flatten();
    let live = before.is_none();
    let today = chrono::Utc::now().date_naive().to_string();
    let suppressed: u64 = dash
        .app
        .store
        .suppressed_usage(&id, &today, &today)
        .await?
        .iter()
        .map(|c| c.events)
        .sum();
    let body = html! {
        p {
            "Calls received by " a href={ "/sources/" (id) } { (source.name) }
            ", newest first, as stored (after enrichment). Select a call to see its JSON."
        }
        p.help #suppressed-note {
            "Calls blocked by a schema rule are stored and marked " span.pill.dead { "Blocked by …" } " with the rule. "
            "Calls from suppressed users are dropped before storage, so they cannot be listed: "
            strong #suppressed-today { (suppressed) } " suppressed today (UTC); see "
            a href={ "/usage?source=" (id) } { "usage" } " for other days."
        }
        @if live {
            p.live #live-status role="status" aria-live="polite" { "Live: new calls appear at the top." }
        } @else {
            p { a href={ "/sources/" (id) "/debugger" } { "Back to the newest calls" } }
        }
        @if events.is_empty() && live {
            p #empty { "No calls yet. Send one with this source's write key and it appears here." }
        }
        ol.events #events
            data-poll=[live.then(|| format!("/sources/{id}/debugger/newer"))]
            data-after=(newest) {
            @for e in &events { (row(e)) }
        }
        @if let Some(o) = older {
            p { a href={ "/sources/" (id) "/debugger?before=" (o) } { "Older calls" } }
        }
    };
    Ok(page(Some(&s), "Live debugger", "debugger", body).into_response())
}

/// The rows newer than `after`, as an HTML fragment for the poller. When a
/// whole page is newer, calls may be missing between it and what is shown:
/// `X-Sluice-More` tells the script to reload the page instead.
pub async fn newer(
    State(dash): State<Arc<Dash>>,
    SignedIn(_): SignedIn,
    PagePath(id): PagePath<String>,
    Query(q): Query<HashMap<String, String>>,
) -> PageResult {
    let after: i64 = q.get("after").and_then(|a| a.parse().ok()).unwrap_or(0);
    let events = dash.app.store.recent_events(&id, None, PAGE).await?;
    let fresh: Vec<_> = events.iter().filter(|e| e.seq > after).collect();
    let more = if fresh.len() == PAGE as usize {
        "1"
    } else {
        "0"
    };
    let markup = html! { @for e in &fresh { (row(e)) } };
    Ok((
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::HeaderName::from_static("x-sluice-fragment"), "1"),
            (header::HeaderName::from_static("x-sluice-more"), more),
        ],
        markup.into_string(),
    )
        .into_response())
}
