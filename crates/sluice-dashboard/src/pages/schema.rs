//! `/sources/{id}/schema`: what a source sends (events, properties, traits)
//! with volumes, a page at a time through the admin API's schema handler;
//! block toggles for track events and traits, and the tracking plan. Every
//! change goes through the admin API's rules handler (same checks, same
//! messages), which reloads ingest's routing at once.

use sluice_api::path_param::PathParam;
use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::State;
use axum::response::IntoResponse;
use maud::{Markup, html};
use serde_json::{Map, Value, json};
use sluice_api::admin::extract::{JsonObject, Params};
use sluice_api::admin::schema as api;
use sluice_schema::rules::MAX_NAME;

use crate::Dash;
use crate::form::Form;
use crate::layout::{
    PagePath, PageResult, SignedIn, check_csrf, csrf_field, page, see_other, urlencode,
};
use crate::session::Session;
use crate::widgets::lines;
use sluice_api::principal::Actor;

/// Entries per page.
const PAGE: u32 = 50;
const KINDS: &[(&str, &str)] = &[
    ("track", "Track events"),
    ("property", "Event properties"),
    ("identify_trait", "Identify traits"),
    ("group_trait", "Group traits"),
    ("page", "Pages"),
    ("screen", "Screens"),
];
const SORTS: &[(&str, &str)] = &[
    ("name", "Name"),
    ("volume_24h", "Volume, 24 h"),
    ("volume_7d", "Volume, 7 days"),
    ("volume_30d", "Volume, 30 days"),
    ("last_seen", "Last seen"),
    ("first_seen", "First seen"),
];

/// Entries of one name kept together with the event first: the store sorts
/// by name, and `property` sorts before `track`, which put an event's
/// property rows above the event itself. Within a run of one name, every
/// entry that is not a property now comes first; the order is otherwise
/// kept.
fn event_first(entries: Vec<Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(entries.len());
    let mut run: Vec<Value> = Vec::new();
    let flush = |run: &mut Vec<Value>, out: &mut Vec<Value>| {
        let (props, others): (Vec<Value>, Vec<Value>) =
            run.drain(..).partition(|e| e["kind"] == "property");
        out.extend(others);
        out.extend(props);
    };
    for e in entries {
        if run.last().is_some_and(|last| last["name"] != e["name"]) {
            flush(&mut run, &mut out);
        }
        run.push(e);
    }
    flush(&mut run, &mut out);
    out
}

/// The rules list a schema kind can be blocked by.
fn block_list(kind: &str) -> Option<&'static str> {
    match kind {
        "track" => Some("blocked_events"),
        "identify_trait" => Some("blocked_identify_traits"),
        "group_trait" => Some("blocked_group_traits"),
        _ => None,
    }
}

fn names(rules: &Value, list: &str) -> Vec<String> {
    rules[list]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// An RFC 3339 time from the API as the dashboard shows times.
fn short_time(v: &Value) -> String {
    v.as_str()
        .map(|t| t.get(..19).unwrap_or(t).replace('T', " "))
        .unwrap_or_default()
}

fn toggle(s: &Session, id: &str, list: &str, name: &str, blocked: bool, back: &str) -> Markup {
    html! {
        form.inline method="post" action={ "/sources/" (id) "/rules/block" } {
            (csrf_field(s))
            input type="hidden" name="list" value=(list);
            input type="hidden" name="name" value=(name);
            input type="hidden" name="back" value=(back);
            @if blocked {
                input type="hidden" name="block" value="0";
                button.small.secondary type="submit" aria-label={ "Unblock " (name) } { "Unblock" }
            } @else {
                input type="hidden" name="block" value="1";
                button.small.danger type="submit" aria-label={ "Block " (name) } { "Block" }
            }
        }
    }
}

/// Why `name` cannot go on a block list, if it cannot: the rules take
/// names of 1 to [`MAX_NAME`] characters, and ingest records longer ones.
fn unblockable(name: &str) -> Option<String> {
    if name.is_empty() {
        Some("Cannot be blocked: the name is empty.".into())
    } else if name.chars().count() > MAX_NAME {
        Some(format!(
            "Cannot be blocked: longer than {MAX_NAME} characters."
        ))
    } else {
        None
    }
}

/// A row's "Blocking" cell: the toggle, or why there is none (rather than
/// a Block button the rules would always refuse).
fn block_cell(
    s: &Session,
    id: &str,
    list: Option<&str>,
    name: &str,
    blocked: bool,
    back: &str,
) -> Markup {
    html! {
        @if let Some(l) = list {
            @match unblockable(name).filter(|_| !blocked) {
                Some(why) => span.muted { (why) },
                None => (toggle(s, id, l, name, blocked, back)),
            }
        }
    }
}

pub async fn show(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    PagePath(id): PagePath<String>,
    Params(q): Params,
) -> PageResult {
    let source = sluice_api::admin::sources::get(State(dash.app.clone()), PathParam(id.clone()))
        .await?
        .0;
    let mut params: HashMap<String, String> = q
        .iter()
        .filter(|(k, _)| ["kind", "sort", "order", "offset"].contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.trim().to_owned()))
        .collect();
    params.insert("limit".into(), PAGE.to_string());
    let listed = api::list(
        State(dash.app.clone()),
        PathParam(id.clone()),
        Params(params),
    )
    .await?
    .0;
    let rules = api::get_rules(State(dash.app.clone()), PathParam(id.clone()))
        .await?
        .0;
    let get = |k: &str| q.get(k).map_or("", |v| v.trim());
    let (kind, sort, order) = (get("kind"), get("sort"), get("order"));
    let offset: u64 = get("offset").parse().unwrap_or(0);
    let here = format!(
        "?kind={}&sort={}&order={}&offset={offset}",
        urlencode(kind),
        urlencode(sort),
        urlencode(order)
    );
    let entries = event_first(listed["data"].as_array().cloned().unwrap_or_default());
    let total = listed["total"].as_u64().unwrap_or(0);
    let next = listed["next_offset"].as_u64();
    let plan_on = rules["tracking_plan"]["enabled"] == json!(true);
    let plan_events = names(&rules["tracking_plan"], "events");
    let name = source.name.as_str();
    let body = html! {
        p {
            "What " a href={ "/sources/" (id) } { (name) } " sends: each event name, top-level property and trait seen, with its JSON types and volumes. "
            "Blocking a track event stores its calls marked blocked and sends them nowhere; blocking a trait removes it from identify or group calls before they are stored."
        }
        @if q.contains_key("saved") { div.notice role="status" { p { "Rules saved. Ingest applies them at once." } } }
        form.filters method="get" action={ "/sources/" (id) "/schema" } {
            div.field {
                label for="kind" { "Show" }
                select #kind name="kind" {
                    option value="" selected[kind.is_empty()] { "Everything" }
                    @for (k, label) in KINDS { option value=(k) selected[kind == *k] { (label) } }
                }
            }
            div.field {
                label for="sort" { "Sort by" }
                select #sort name="sort" {
                    @for (k, label) in SORTS { option value=(k) selected[sort == *k] { (label) } }
                }
            }
            div.field {
                label for="order" { "Order" }
                select #order name="order" {
                    option value="" selected[order.is_empty()] { "Default" }
                    option value="asc" selected[order == "asc"] { "Ascending" }
                    option value="desc" selected[order == "desc"] { "Descending" }
                }
            }
            button type="submit" { "Show" }
        }
        @if entries.is_empty() {
            p #no-schema { "Nothing recorded yet. The schema is written every few seconds from what the source sends." }
        } @else {
            div.table-wrap {
                table #schema {
                    caption { (total) " entries; " (offset + 1) "–" (offset + entries.len() as u64) " shown. Volumes are calls per period, counted when received." }
                    thead { tr {
                        th scope="col" { "Kind" } th scope="col" { "Name" } th scope="col" { "Property" } th scope="col" { "Types" }
                        th scope="col" .num { "24 h" } th scope="col" .num { "7 days" } th scope="col" .num { "30 days" }
                        th scope="col" { "Last seen (UTC)" } th scope="col" { "Blocking" }
                    } }
                    tbody {
                        @for e in &entries {
                            @let k = e["kind"].as_str().unwrap_or("");
                            @let n = e["name"].as_str().unwrap_or("");
                            @let list = block_list(k);
                            @let blocked = list.is_some_and(|l| names(&rules, l).iter().any(|b| b == n));
                            tr.blocked[blocked] {
                                td data-label="Kind" { (k) }
                                td.wrap data-label="Name" { (n) @if blocked { " " span.pill.dead { "Blocked" } } }
                                td.wrap data-label="Property" { (e["property"].as_str().unwrap_or("")) }
                                td data-label="Types" { (e["types"].as_array().map(|t| t.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", ")).unwrap_or_default()) }
                                td.num data-label="24 h" { (e["volume_24h"]) } td.num data-label="7 days" { (e["volume_7d"]) } td.num data-label="30 days" { (e["volume_30d"]) }
                                td data-label="Last seen (UTC)" { (short_time(&e["last_seen"])) }
                                td data-label="Blocking" { (block_cell(&s, &id, list, n, blocked, &here)) }
                            }
                        }
                    }
                }
            }
        }
        p.actions {
            @if offset > 0 {
                a href={ "?kind=" (urlencode(kind)) "&sort=" (urlencode(sort)) "&order=" (urlencode(order)) "&offset=" (offset.saturating_sub(u64::from(PAGE))) } { "Previous page" }
            }
            @if let Some(n) = next {
                a href={ "?kind=" (urlencode(kind)) "&sort=" (urlencode(sort)) "&order=" (urlencode(order)) "&offset=" (n) } { "Next page" }
            }
        }
        @if listed["overflow"].as_u64().unwrap_or(0) > 0 {
            p.help { (listed["overflow"]) " observations of new entries were not recorded: the source reached its schema cap." }
        }
        h2 { "Blocked" }
        dl.facts #blocked {
            @for (list, label) in [("blocked_events", "Track events"), ("blocked_identify_traits", "Identify traits"), ("blocked_group_traits", "Group traits")] {
                dt { (label) }
                dd {
                    @let all = names(&rules, list);
                    @if all.is_empty() { "None." }
                    ul.plain { @for n in &all { li { code { (n) } " " (toggle(&s, &id, list, n, true, &here)) } } }
                }
            }
        }
        h2 #plan-h { "Tracking plan" }
        form.card method="post" action={ "/sources/" (id) "/rules/plan" } aria-labelledby="plan-h" {
            (csrf_field(&s))
            p { "When enforced, a track call whose event is not listed is blocked (rule " code { "tracking_plan" } "). Page, screen, identify, group and alias calls pass." }
            div.check {
                input #plan-enabled type="checkbox" name="enabled" value="1" checked[plan_on];
                label for="plan-enabled" { "Enforce the tracking plan" }
            }
            div.field {
                label for="plan-events" { "Planned track events" }
                textarea #plan-events name="events" rows="5" aria-describedby="plan-events-help" { (plan_events.join("\n")) }
                p.help #plan-events-help { "One event name per line." }
            }
            button type="submit" { "Save tracking plan" }
        }
    };
    Ok(page(Some(&s), &format!("Schema of {name}"), "sources", body).into_response())
}

async fn save(dash: &Dash, actor: &Actor, id: &str, rules: Value) -> PageResult<()> {
    let body = match rules {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    let _saved = api::put_rules(
        State(dash.app.clone()),
        actor.clone(),
        PathParam(id.to_owned()),
        JsonObject(body),
    )
    .await?;
    Ok(())
}

/// Safe return target: only a query string of this page.
fn back_to(id: &str, back: &str) -> String {
    let query = if back.starts_with('?') && !back.contains(['\r', '\n', '#']) {
        back
    } else {
        "?"
    };
    format!("/sources/{id}/schema{query}&saved=1")
}

/// Blocks or unblocks one event or trait (`list`, `name`, `block`).
pub async fn block(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    PagePath(id): PagePath<String>,
    form: Form,
) -> PageResult {
    check_csrf(&s, &form)?;
    let list = form.get("list");
    if ![
        "blocked_events",
        "blocked_identify_traits",
        "blocked_group_traits",
    ]
    .contains(&list)
    {
        return Err(sluice_api::ApiError::invalid("list", "is not a block list").into());
    }
    let name = form.raw("name").to_owned();
    let mut rules = api::get_rules(State(dash.app.clone()), PathParam(id.clone()))
        .await?
        .0;
    let mut current = names(&rules, list);
    current.retain(|n| *n != name);
    if form.get("block") == "1" {
        current.push(name);
    }
    rules[list] = json!(current);
    save(&dash, &s.actor, &id, rules).await?;
    Ok(see_other(&back_to(&id, form.get("back"))))
}

/// Saves the tracking plan (`enabled`, `events` one per line).
pub async fn plan(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    PagePath(id): PagePath<String>,
    form: Form,
) -> PageResult {
    check_csrf(&s, &form)?;
    let mut rules = api::get_rules(State(dash.app.clone()), PathParam(id.clone()))
        .await?
        .0;
    rules["tracking_plan"] = json!({
        "enabled": form.checked("enabled"),
        "events": lines(form.raw("events")),
    });
    save(&dash, &s.actor, &id, rules).await?;
    Ok(see_other(&format!("/sources/{id}/schema?saved=1#plan-h")))
}

#[cfg(test)]
#[path = "schema_tests.rs"]
mod tests;
