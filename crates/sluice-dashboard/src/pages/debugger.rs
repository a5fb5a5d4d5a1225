//! `/sources/{id}/debugger`: a source's calls as stored after enrichment,
//! newest first, one page at a time; each expands to its JSON. On the first
//! page the script asks `newer?after=<seq>` every two seconds and puts what
//! arrived on top (short poll: no connection held open per viewer).
//!
//! Search: by type, event or page name, userId or anonymousId, and
//! messageId (a `GET` form, so a search is a link; the live poll keeps it).
//! A searched page reads at most [`SEARCH_SCAN`] calls, newest first, and
//! "Older calls" goes on from where it stopped. **Pause** is a link to the
//! same view with `paused=1`: the page is drawn without the poll, so what
//! is on screen stays put until **Resume**; it needs no script.

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
use crate::layout::{PagePath, PageResult, SignedIn, page, see_other, urlencode, when};

/// Events per page.
pub const PAGE: u32 = 25;
/// Calls read at most for one searched page.
pub const SEARCH_SCAN: usize = 2000;
/// Calls per store read while searching.
const CHUNK: u32 = 200;

/// What the debugger is searched for; every field is optional.
#[derive(Debug, Default)]
struct Search {
    kind: Option<String>,
    name: Option<String>,
    user: Option<String>,
    message_id: Option<String>,
}

/// The search fields, as the form and its links name them.
const FIELDS: [&str; 4] = ["type", "event", "user", "message_id"];

impl Search {
    fn from_query(q: &HashMap<String, String>) -> Search {
        let text = |k: &str| {
            q.get(k)
                .map(|v| v.trim())
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        };
        Search {
            kind: text("type"),
            name: text("event"),
            user: text("user"),
            message_id: text("message_id"),
        }
    }

    fn is_empty(&self) -> bool {
        self.kind.is_none()
            && self.name.is_none()
            && self.user.is_none()
            && self.message_id.is_none()
    }

    fn matches(&self, e: &StoredEvent) -> bool {
        if self.is_empty() {
            return true;
        }
        let same = |want: &Option<String>, got: Option<&str>| {
            want.as_deref().is_none_or(|w| got == Some(w))
        };
        if !same(&self.kind, Some(&e.event_type)) || !same(&self.message_id, Some(&e.message_id)) {
            return false;
        }
        if self.name.is_none() && self.user.is_none() {
            return true;
        }
        let body: Value = serde_json::from_str(&e.body).unwrap_or(Value::Null);
        let s = |k: &str| body.get(k).and_then(Value::as_str);
        same(&self.name, s("event").or_else(|| s("name")))
            && (same(&self.user, s("userId")) || same(&self.user, s("anonymousId")))
    }

    /// The search as query parameters (`&type=…&event=…`), for links.
    fn query(&self) -> String {
        let mut out = String::new();
        for (k, v) in FIELDS
            .iter()
            .zip([&self.kind, &self.name, &self.user, &self.message_id])
        {
            if let Some(v) = v {
                out.push_str(&format!("&{k}={}", urlencode(v)));
            }
        }
        out
    }
}

/// Up to a page of `source`'s calls before `before` that `search` matches,
/// reading at most [`SEARCH_SCAN`]; and the cursor to go on from.
async fn find(
    store: &dyn sluice_store::Store,
    source: &str,
    before: Option<i64>,
    search: &Search,
) -> Result<(Vec<StoredEvent>, Option<i64>), sluice_store::StoreError> {
    if search.is_empty() {
        let events = store.recent_events(source, before, PAGE).await?;
        let older = (events.len() == PAGE as usize)
            .then(|| events.last().map(|e| e.seq))
            .flatten();
        return Ok((events, older));
    }
    let (mut kept, mut read, mut cursor) = (Vec::new(), 0usize, before);
    loop {
        let chunk = store.recent_events(source, cursor, CHUNK).await?;
        let done = chunk.len() < CHUNK as usize;
        for e in chunk {
            read += 1;
            cursor = Some(e.seq);
            if search.matches(&e) {
                kept.push(e);
            }
            if kept.len() >= PAGE as usize || read >= SEARCH_SCAN {
                return Ok((kept, cursor));
            }
        }
        if done {
            return Ok((kept, None));
        }
    }
}

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
    let search = Search::from_query(&q);
    let (events, older) = find(dash.app.store.as_ref(), &id, before, &search).await?;
    // The poll starts after the newest call stored, matching or not.
    let newest = match dash.app.store.recent_events(&id, None, 1).await?.first() {
        Some(e) if before.is_none() => e.seq,
        _ => events.first().map_or(0, |e| e.seq),
    };
    let paused = q.get("paused").is_some_and(|p| p == "1");
    let live = before.is_none() && !paused;
    let here = format!(
        "/sources/{id}/debugger?{}",
        search.query().trim_start_matches('&')
    );
    let v = |k: &str| q.get(k).map_or("", |v| v.trim()).to_owned();
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
        form.filters method="get" action={ "/sources/" (id) "/debugger" } {
            div.field {
                label for="type" { "Type" }
                select #type name="type" {
                    option value="" selected[v("type").is_empty()] { "Any" }
                    @for t in ["track", "identify", "page", "screen", "group", "alias"] {
                        option value=(t) selected[v("type") == t] { (t) }
                    }
                }
            }
            div.field { label for="event" { "Event or page name" } input #event name="event" value=(v("event")); }
            div.field { label for="user" { "userId or anonymousId" } input #user name="user" value=(v("user")); }
            div.field { label for="message_id" { "messageId" } input #message_id name="message_id" value=(v("message_id")); }
            @if paused { input type="hidden" name="paused" value="1"; }
            button type="submit" { "Search" }
            a href={ "/sources/" (id) "/debugger" } { "Clear" }
        }
        @if live {
            p.live #live-status role="status" aria-live="polite" {
                span #live-text { "Live: new calls appear at the top." }
                " "
                a #pause href={ (here) "&paused=1" } { "Pause" }
            }
        } @else if paused && before.is_none() {
            p.live #live-status role="status" { "Paused: new calls are not shown. " a #resume href=(here) { "Resume" } }
        } @else {
            p { a href=(here) { "Back to the newest calls" } }
        }
        @if events.is_empty() && before.is_none() {
            @if search.is_empty() {
                p #empty { "No calls yet. Send one with this source's write key and it appears here." }
            } @else {
                p #empty { "No call among the newest " (SEARCH_SCAN) " matches." }
            }
        }
        ol.events #events
            data-poll=[live.then(|| format!("/sources/{id}/debugger/newer?{}", search.query().trim_start_matches('&')))]
            data-after=(newest) {
            @for e in &events { (row(e)) }
        }
        @if let Some(o) = older {
            p { a href={ (here) "&before=" (o) @if paused { "&paused=1" } } { "Older calls" } }
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
    let search = Search::from_query(&q);
    let events = dash.app.store.recent_events(&id, None, PAGE).await?;
    let fresh: Vec<_> = events.iter().filter(|e| e.seq > after).collect();
    let more = if fresh.len() == PAGE as usize {
        "1"
    } else {
        "0"
    };
    let markup = html! { @for e in fresh.iter().filter(|e| search.matches(e)) { (row(e)) } };
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
