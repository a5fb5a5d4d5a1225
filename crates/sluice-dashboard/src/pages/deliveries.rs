//! `/destinations/{id}/deliveries`: the delivery log. Deliveries newest
//! first, a page at a time, filtered by state and messageId (through the
//! admin API's own list handler, so a bad filter gets its message), by a
//! time window, by what the call carries and by HTTP status (see
//! [`super::delivery_search`]); each says what its call carries and
//! expands to its attempts. Dead deliveries replay one at a
//! time, all together, or those that died since a time. The chart covers the attempts of the destination's latest
//! deliveries.

use sluice_api::path_param::PathParam;
use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use chrono::Utc;
use maud::{Markup, html};
use serde_json::{Map, Value};
use sluice_api::ApiError;
use sluice_api::admin::deliveries as api;
use sluice_api::admin::extract::{OptionalJsonObject, Params};
use sluice_store::{Attempt, DeliveryFilter, DeliveryRecord, DeliveryState};

use super::delivery_search::{CONTENT_SCAN, Search, carried_query, content_fields};
use super::delivery_window::{
    Carried, REPLAY_SCAN, SCAN, Window, carried, carried_line, parse_time, scan,
};
use crate::Dash;
use crate::chart::{bucket_attempts, outcomes};
use crate::form::Form;
use crate::layout::{
    PagePath, PageResult, SignedIn, check_csrf, csrf_field, page, see_other, urlencode, when,
};
use crate::session::Session;
use crate::widgets::plural;
use sluice_api::principal::Actor;

/// Deliveries per page.
const PAGE: u32 = 20;
/// Deliveries whose attempts the chart covers.
const CHART_DELIVERIES: u32 = 100;
const STATES: &[&str] = &["pending", "succeeded", "dead", "discarded", "filtered"];

fn attempt_row(a: &Attempt) -> Markup {
    html! {
        tr {
            td { (a.attempt) }
            td { (when(&a.at)) }
            td.wrap.url { code { (a.url) } }
            td {
                @match (a.status, &a.error) {
                    (Some(st), _) => span class={ "status " @if (200..300).contains(&st) { "ok" } @else { "fail" } } { (st) },
                    (None, Some(e)) => span.status.fail { (e) },
                    (None, None) => "—",
                }
            }
            td.num { (a.latency_ms) " ms" }
            td.wrap { @if let Some(r) = &a.response { code.excerpt { (r) } } }
        }
    }
}

fn delivery_row(
    s: &Session,
    d: &DeliveryRecord,
    attempts: &[Attempt],
    carried: Option<&Carried>,
    marked: bool,
) -> Markup {
    html! {
        li.delivery.marked[marked] data-state=(d.state.as_str()) {
            @if marked { p.mark { strong { "Test event" } } }
            div.delivery-head {
                span class={ "pill " (d.state.as_str()) } { (d.state.as_str()) }
                " "
                a href={ "?message_id=" (urlencode(&d.message_id)) } { code { (d.message_id) } }
                " "
                (carried_line(carried))
                span.muted.rounds { " · " (d.attempts) " " (plural(u64::from(d.attempts), "attempt round", "attempt rounds")) " · updated " (when(&d.updated_at)) }
                @if d.state == DeliveryState::Dead {
                    form.inline method="post" action={ "/deliveries/" (d.id) "/replay" } {
                        (csrf_field(s))
                        button.small type="submit" aria-label={ "Replay delivery " (d.id) } { "Replay" }
                    }
                }
            }
            @if let Some(e) = &d.last_error {
                @if d.state == DeliveryState::Filtered { p.muted { "Dropped by the filter " strong { (e) } ": never sent." } }
                @else if d.state != DeliveryState::Succeeded { p.muted { "Last error: " (e) } }
            }
            @if let Some(next) = &d.next_attempt_at { @if d.state == DeliveryState::Pending { p.muted { "Next attempt " (when(next)) } } }
            details {
                summary { "Attempts (" (attempts.len()) ")" }
                @if attempts.is_empty() { p { "No attempt yet." } } @else {
                    div.table-wrap {
                        table.attempts {
                            thead { tr { th scope="col" { "#" } th scope="col" { "Time" } th scope="col" { "URL" } th scope="col" { "Status or error" } th scope="col" .num { "Latency" } th scope="col" { "Response" } } }
                            tbody { @for a in attempts { (attempt_row(a)) } }
                        }
                    }
                }
            }
        }
    }
}

pub async fn show(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    PagePath(id): PagePath<String>,
    Query(q): Query<HashMap<String, String>>,
) -> PageResult {
    let app = &dash.app;
    let dest = app
        .store
        .get_destination(&id)
        .await?
        .ok_or_else(|| ApiError::not_found("destination"))?;
    let (search, search_errors) = Search::from_query(&q, Utc::now());
    let (rows, older) = if search.is_open() {
        let mut params: HashMap<String, String> = q
            .iter()
            .filter(|(k, _)| ["state", "message_id", "before"].contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.trim().to_owned()))
            .collect();
        params.insert("limit".into(), PAGE.to_string());
        let listed =
            api::list_for_destination(State(app.clone()), PathParam(id.clone()), Params(params))
                .await?;
        // The API shows a filtered delivery's filter as `filter`, not as an error.
        let rows: Vec<DeliveryRecord> = listed
            .0
            .data
            .into_iter()
            .map(|d| {
                let mut record = d.record;
                if let Some(f) = d.filter {
                    record.last_error = Some(f);
                }
                record
            })
            .collect();
        (rows, listed.0.next_before)
    } else {
        let state = match q.get("state").map(|v| v.trim()).filter(|v| !v.is_empty()) {
            None => None,
            Some(v) => Some(DeliveryState::parse(v).ok_or_else(|| {
                ApiError::bad_request(
                    "invalid_query",
                    "state: must be one of pending, succeeded, dead, discarded, filtered",
                )
            })?),
        };
        let filter = DeliveryFilter {
            destination_id: Some(id.clone()),
            message_id: q
                .get("message_id")
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty()),
            state,
            before_id: q.get("before").and_then(|v| v.trim().parse().ok()),
            limit: PAGE,
        };
        let most = if search.by_content() {
            CONTENT_SCAN
        } else {
            SCAN
        };
        scan(app.store.as_ref(), &filter, &search, PAGE as usize, most).await?
    };
    let mut page_rows = Vec::with_capacity(rows.len());
    for d in rows {
        let attempts = app.store.list_attempts(d.id).await?;
        let call = carried(app.store.as_ref(), &d).await?;
        page_rows.push((d, attempts, call));
    }
    let recent = app
        .store
        .list_deliveries(&DeliveryFilter {
            destination_id: Some(id.clone()),
            limit: CHART_DELIVERIES,
            ..DeliveryFilter::default()
        })
        .await?;
    let mut chart_attempts = Vec::new();
    for d in &recent {
        chart_attempts.extend(app.store.list_attempts(d.id).await?);
    }
    let buckets = bucket_attempts(&chart_attempts, 12);
    let state = q.get("state").map_or("", |v| v.as_str());
    let message_id = q.get("message_id").map_or("", |v| v.trim());
    let waiting = page_rows
        .iter()
        .any(|(d, _, _)| d.state == DeliveryState::Pending);
    // The replay controls show only when there is something to replay.
    let any_dead = !app
        .store
        .list_deliveries(&DeliveryFilter {
            destination_id: Some(id.clone()),
            message_id: q
                .get("message_id")
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty()),
            state: Some(DeliveryState::Dead),
            limit: 1,
            ..DeliveryFilter::default()
        })
        .await?
        .is_empty();
    let since_text = q.get("since").map_or("", |v| v.trim());
    let until_text = q.get("until").map_or("", |v| v.trim());
    let body = html! {
        p { "Deliveries of " a href={ "/destinations/" (id) } { (dest.name) } ", newest first." }
        @if let Some(t) = q.get("test") {
            div.notice role="status" { p { "Test event sent (messageId " code { (t) } "). Its delivery is marked below." } }
        }
        @if let Some(n) = q.get("replayed") {
            div.notice role="status" { p {
                (n) " dead " (if n == "1" { "delivery" } else { "deliveries" })
                @if let Some(t) = q.get("died_since") { " that died since " (t) }
                " replayed: back to pending, due now."
            } }
        }
        h2 { "Attempts over time" }
        @if chart_attempts.is_empty() { p { "No attempts yet." } } @else {
            (outcomes(&format!("Attempts of the latest {} deliveries: succeeded, failed and mean latency", recent.len()), &buckets))
            p.help { "Covers the attempts of the latest " (recent.len()) " deliveries." }
        }
        h2 { "Deliveries" }
        form.filters method="get" action={ "/destinations/" (id) "/deliveries" } {
            div.field {
                label for="state" { "State" }
                select #state name="state" {
                    option value="" selected[state.is_empty()] { "Any" }
                    @for st in STATES { option value=(st) selected[state == *st] { (st) } }
                }
            }
            div.field {
                label for="message_id" { "messageId" }
                input #message_id name="message_id" value=(message_id);
            }
            div.field {
                label for="since" { "Changed since" }
                input #since name="since" value=(since_text) placeholder="2h or 2026-11-28T10:00" aria-describedby="window-help";
            }
            div.field {
                label for="until" { "Changed until" }
                input #until name="until" value=(until_text) placeholder="30m or 2026-11-28T11:00" aria-describedby="window-help";
            }
            (content_fields(&q))
            button type="submit" { "Filter" }
            a href={ "/destinations/" (id) "/deliveries" } { "Clear" }
            p.help #window-help { "Times are UTC; an age such as 2h counts back from now. A delivery's time is its last change: when it succeeded, died or was last tried." }
            @if !search_errors.is_empty() { p.field-error #window-error role="alert" { (search_errors.join("; ")) } }
        }
        @if any_dead {
        form.inline method="post" action={ "/destinations/" (id) "/replay" } data-confirm="Replay every dead delivery of this destination?" {
            (csrf_field(&s))
            @if !message_id.is_empty() { input type="hidden" name="message_id" value=(message_id); }
            button.secondary type="submit" {
                @if message_id.is_empty() { "Replay all dead deliveries" } @else { "Replay dead deliveries of this messageId" }
            }
        }
        form.inline.replay-since method="post" action={ "/destinations/" (id) "/replay" } {
            (csrf_field(&s))
            @if !message_id.is_empty() { input type="hidden" name="message_id" value=(message_id); }
            label for="died-since" { "Replay dead deliveries that died since" }
            " "
            input #died-since name="since" required placeholder="2h or 2026-11-28T10:00" value=(since_text);
            " "
            button.secondary type="submit" { "Replay dead since" }
        }
        }
        @if page_rows.is_empty() { p #no-deliveries { "No deliveries match." } }
        ol.deliveries data-refresh=[waiting.then_some("3000")] {
            @for (d, attempts, call) in &page_rows {
                (delivery_row(&s, d, attempts, call.as_ref(), q.get("test").is_some_and(|t| *t == d.message_id)))
            }
        }
        @if let Some(o) = older {
            p { a href={ "?state=" (urlencode(state)) "&message_id=" (urlencode(message_id)) (carried_query(&q)) "&before=" (o) } { "Older deliveries" } }
        }
    };
    Ok(page(Some(&s), "Delivery log", "destinations", body).into_response())
}

pub async fn replay_one(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    PagePath(id): PagePath<String>,
    form: Form,
) -> PageResult {
    check_csrf(&s, &form)?;
    let id: i64 = id.parse().map_err(|_| ApiError::not_found("delivery"))?;
    let delivery = dash
        .app
        .store
        .get_delivery(id)
        .await?
        .ok_or_else(|| ApiError::not_found("delivery"))?;
    let out = api::replay_one(State(dash.app.clone()), s.actor.clone(), PathParam(id))
        .await?
        .0;
    Ok(see_other(&format!(
        "/destinations/{}/deliveries?replayed={}&message_id={}",
        delivery.destination_id,
        out.replayed,
        urlencode(&delivery.message_id)
    )))
}

pub async fn replay_all(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    PagePath(id): PagePath<String>,
    form: Form,
) -> PageResult {
    check_csrf(&s, &form)?;
    let message_id = form.get("message_id");
    if !form.get("since").is_empty() {
        return replay_since(&dash, &s.actor, &id, form.get("since"), message_id).await;
    }
    let mut body = Map::new();
    if !message_id.is_empty() {
        body.insert("message_id".into(), Value::String(message_id.to_owned()));
    }
    let out = api::replay_bulk(
        State(dash.app.clone()),
        s.actor.clone(),
        PathParam(id.clone()),
        OptionalJsonObject(body),
    )
    .await?
    .0;
    Ok(see_other(&format!(
        "/destinations/{id}/deliveries?replayed={}&message_id={}",
        out.replayed,
        urlencode(message_id)
    )))
}

/// Replays the destination's dead deliveries that died since the time
/// typed (a dead delivery's last change is its death), one by one through
/// the admin API's handler, as the CLI's `replay --since` does. One that is
/// no longer dead (replayed meanwhile) is skipped.
async fn replay_since(
    dash: &Dash,
    actor: &Actor,
    id: &str,
    since: &str,
    message_id: &str,
) -> PageResult {
    let at = parse_time(since, Utc::now()).map_err(|e| ApiError::invalid("since", e))?;
    dash.app
        .store
        .get_destination(id)
        .await?
        .ok_or_else(|| ApiError::not_found("destination"))?;
    let filter = DeliveryFilter {
        destination_id: Some(id.to_owned()),
        message_id: (!message_id.is_empty()).then(|| message_id.to_owned()),
        state: Some(DeliveryState::Dead),
        ..DeliveryFilter::default()
    };
    let search = Search {
        window: Window {
            since: Some(at),
            until: None,
        },
        ..Search::default()
    };
    let (dead, _) = scan(
        dash.app.store.as_ref(),
        &filter,
        &search,
        usize::MAX,
        REPLAY_SCAN,
    )
    .await?;
    let mut replayed = 0;
    for d in dead {
        match api::replay_one(State(dash.app.clone()), actor.clone(), PathParam(d.id)).await {
            Ok(out) => replayed += out.0.replayed,
            Err(e) if e.status == StatusCode::CONFLICT => {}
            Err(e) => return Err(e.into()),
        }
    }
    let shown = at.format("%Y-%m-%d %H:%M:%S UTC").to_string();
    Ok(see_other(&format!(
        "/destinations/{id}/deliveries?replayed={replayed}&died_since={}&message_id={}",
        urlencode(&shown),
        urlencode(message_id)
    )))
}
