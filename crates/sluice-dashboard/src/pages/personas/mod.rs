//! Computed traits (`/computed-traits`) and audiences (`/audiences`): the
//! lists with counts and status, the builder with preview, one definition's
//! page (status, definition, destinations to connect, members a page at a
//! time) and delete. Reads and writes go through the admin API's handlers.
//!
//! - [`draft`]: the builder's fields → a definition (pure).
//! - [`builder`]: the builder form, preview and save.

pub mod builder;
pub mod draft;

use sluice_api::path_param::PathParam;
use std::collections::HashMap;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::response::IntoResponse;
use axum::routing::{get, post};
use maud::{Markup, html};
use serde_json::{Value, json};
use sluice_api::admin::extract::Params;
use sluice_api::admin::personas::computations as api;
use sluice_profiles::{AUDIENCE, TRAIT};

use crate::Dash;
use crate::form::Form;
use crate::layout::{
    PagePath, PageResult, SignedIn, check_csrf, csrf_field, page, see_other, urlencode,
};
use crate::widgets::{compact, plural, pretty};

/// Members per page on a definition's page.
const MEMBERS_PAGE: u32 = 50;
/// Definitions per page of a list.
const LIST_PAGE: u32 = 50;

/// Which of the two classes a page is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Trait,
    Audience,
}

impl Class {
    pub fn name(self) -> &'static str {
        match self {
            Class::Trait => TRAIT,
            Class::Audience => AUDIENCE,
        }
    }
    pub fn is_audience(self) -> bool {
        self == Class::Audience
    }
    pub fn path(self) -> &'static str {
        match self {
            Class::Trait => "/computed-traits",
            Class::Audience => "/audiences",
        }
    }
    pub fn nav(self) -> &'static str {
        match self {
            Class::Trait => "traits",
            Class::Audience => "audiences",
        }
    }
    fn title(self) -> &'static str {
        match self {
            Class::Trait => "Computed traits",
            Class::Audience => "Audiences",
        }
    }
    pub fn new_title(self) -> String {
        match self {
            Class::Trait => "New computed trait".into(),
            Class::Audience => "New audience".into(),
        }
    }
    /// What the count counts.
    pub fn counted(self) -> &'static str {
        match self {
            Class::Trait => "people with a value",
            Class::Audience => "members",
        }
    }
    /// What the count counts, as a heading or a label.
    pub fn counted_title(self) -> &'static str {
        match self {
            Class::Trait => "People with a value",
            Class::Audience => "Members",
        }
    }
    /// What the count counts, for a count of `n`.
    pub fn counted_n(self, n: u64) -> &'static str {
        match self {
            Class::Trait => plural(n, "person with a value", "people with a value"),
            Class::Audience => plural(n, "member", "members"),
        }
    }
    fn count(self, v: &Value) -> Value {
        match self {
            Class::Trait => v["status"]["people_with_value"].clone(),
            Class::Audience => v["status"]["size"].clone(),
        }
    }
}

/// The routes of one class, nested under [`Class::path`].
pub fn routes(class: Class) -> Router<Arc<Dash>> {
    Router::new()
        .route("/", get(move |st, si, q| list(st, si, class, q)))
        .route(
            "/new",
            get(move |st, si| builder::form(st, si, class))
                .post(move |st, si, f| builder::submit(st, si, class, f)),
        )
        .route("/{id}", get(move |st, si, p, q| show(st, si, class, p, q)))
        .route(
            "/{id}/destinations/{destination_id}",
            post(move |st, si, p, f| connect(st, si, class, p, f)),
        )
        .route(
            "/{id}/delete",
            post(move |st, si, p, f| delete(st, si, class, p, f)),
        )
}

fn short_time(v: &Value) -> String {
    v.as_str()
        .map(|t| t.get(..19).unwrap_or(t).replace('T', " "))
        .unwrap_or_else(|| "not yet".into())
}

fn summary(def: &Value) -> String {
    if let Some(kind) = def["kind"].as_str() {
        let prop = def["property"]
            .as_str()
            .map(|p| format!(" of {p}"))
            .unwrap_or_default();
        return format!("{kind}{prop} over {}", def["event"].as_str().unwrap_or(""));
    }
    let c = def["condition"].to_string();
    if c.chars().count() > 90 {
        format!("{}…", c.chars().take(90).collect::<String>())
    } else {
        c
    }
}

/// A page of the list, oldest first; `after` is the cursor.
pub async fn list(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    class: Class,
    Params(q): Params,
) -> PageResult {
    let after = q.get("after").cloned().unwrap_or_default();
    let params = HashMap::from([
        ("after".to_owned(), after.clone()),
        ("limit".to_owned(), LIST_PAGE.to_string()),
    ]);
    let out = api::list(State(dash.app.clone()), class.name(), Params(params))
        .await?
        .0;
    let items = out["data"].as_array().cloned().unwrap_or_default();
    let total = out["total"].as_u64().unwrap_or(0);
    let body = html! {
        p {
            @if class.is_audience() { "Groups of people matching a condition over their events, traits and computed traits. Entering and leaving are sent to the connected destinations as identify calls (trait true / false)." }
            @else { "Values computed per person from their events (a count, a sum, the last value…). Each change is sent to the connected destinations as an identify call." }
            " Profiles join calls across sources by userId and anonymousId: " a href="/profiles" { "look one up" } "."
        }
        p.actions { a.button href={ (class.path()) "/new" } { (class.new_title()) } }
        @if items.is_empty() {
            p #no-computations { @if after.is_empty() { "None yet." } @else { "No more." } }
        } @else {
            p #total { (total) " in all; " (LIST_PAGE) " a page, oldest first." }
            div.table-wrap {
                table #computations {
                    caption.sr-only { (class.title()) }
                    thead { tr {
                        th scope="col" { "Name" } th scope="col" { "Key" } th scope="col" { "Definition" }
                        th scope="col" .num { @if class.is_audience() { "Members" } @else { "People with a value" } }
                        th scope="col" .num { "Messages sent" } th scope="col" .num { "Destinations" } th scope="col" { "Last computed (UTC)" }
                    } }
                    tbody {
                        @for c in &items {
                            tr {
                                td { a href={ (class.path()) "/" (c["id"].as_str().unwrap_or("")) } { (c["name"].as_str().unwrap_or("")) } }
                                td { code { (c["key"].as_str().unwrap_or("")) } }
                                td.wrap { code { (summary(&c["definition"])) } }
                                td.num.count { (class.count(c)) }
                                td.num { (c["status"]["messages_sent"]) }
                                td.num { (c["destination_ids"].as_array().map_or(0, Vec::len)) }
                                td { (short_time(&c["status"]["last_computed_at"])) }
                            }
                        }
                    }
                }
            }
        }
        p.actions {
            @if !after.is_empty() { a href=(class.path()) { "First page" } }
            @if let Some(n) = out["next_after"].as_str() { a #next href={ "?after=" (urlencode(n)) } { "Next page" } }
        }
    };
    Ok(page(Some(&s), class.title(), class.nav(), body).into_response())
}

fn members_table(class: Class, members: &[Value]) -> Markup {
    html! {
        div.table-wrap {
            table #members {
                caption.sr-only { (class.counted()) }
                thead { tr { th scope="col" { "userId" } th scope="col" { "Profile" } th scope="col" { "Value" } } }
                tbody {
                    @for m in members {
                        @let pid = m["profile_id"].as_str().unwrap_or("");
                        tr {
                            td { (m["user_id"].as_str().unwrap_or("—")) }
                            td { a href={ "/profiles?id=" (urlencode(pid)) } { code { (pid) } } }
                            td { code { (compact(&m["value"])) } }
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
    class: Class,
    PagePath(id): PagePath<String>,
    Params(q): Params,
) -> PageResult {
    let c = api::get(State(dash.app.clone()), class.name(), PathParam(id.clone()))
        .await?
        .0;
    let after = q.get("after").cloned().unwrap_or_default();
    let params = HashMap::from([
        ("after".to_owned(), after.clone()),
        ("limit".to_owned(), MEMBERS_PAGE.to_string()),
    ]);
    let members = api::members(
        State(dash.app.clone()),
        class.name(),
        PathParam(id.clone()),
        Params(params),
    )
    .await?
    .0;
    let destinations = dash.app.store.list_destinations().await?;
    let connected: Vec<&str> = c["destination_ids"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let sent = &c["status"]["messages_sent_by_destination"];
    let rows = members["data"].as_array().cloned().unwrap_or_default();
    let name = c["name"].as_str().unwrap_or("").to_owned();
    let body = html! {
        @if q.contains_key("created") {
            div.notice role="status" { p { "Saved. Everyone it applies to is computed from the stored events now, and the connected destinations get one message each." } }
        }
        @if q.contains_key("connected") { div.notice role="status" { p { "Destinations updated." } } }
        dl.facts {
            dt { "Key" } dd { code { (c["key"].as_str().unwrap_or("")) } }
            dt { (class.counted_title()) } dd #count { (class.count(&c)) }
            dt { "Messages sent" } dd { (c["status"]["messages_sent"]) }
            dt { "Last computed (UTC)" } dd { (short_time(&c["status"]["last_computed_at"])) }
            dt { "Revision" } dd { (c["revision"]) }
        }
        details { summary { "Definition" } pre.json #definition { code { (pretty(&c["definition"])) } } }
        h2 { "Destinations" }
        p { "A newly connected destination gets every current value once; afterwards only changes." }
        @if destinations.is_empty() { p { "No destinations yet." } }
        ul.plain #destinations {
            @for d in &destinations {
                @let on = connected.contains(&d.id.as_str());
                li {
                    form.inline method="post" action={ (class.path()) "/" (id) "/destinations/" (d.id) } {
                        (csrf_field(&s))
                        input type="hidden" name="on" value=(if on { "0" } else { "1" });
                        a href={ "/destinations/" (d.id) } { (d.name) }
                        " " @if on { span.pill.on { "Connected" } " " span.muted { (sent.get(&d.id).cloned().unwrap_or(json!(0))) " sent" } }
                        button.small.secondary type="submit" aria-label={ @if on { "Disconnect " } @else { "Connect " } (d.name) } {
                            @if on { "Disconnect" } @else { "Connect" }
                        }
                    }
                }
            }
        }
        h2 { (class.counted_title()) }
        @if rows.is_empty() { p #no-members { @if after.is_empty() { "Nobody yet." } @else { "No more." } } }
        @else { (members_table(class, &rows)) }
        p.actions {
            @if !after.is_empty() { a href={ (class.path()) "/" (id) } { "First page" } }
            @if let Some(n) = members["next_after"].as_str() { a href={ "?after=" (urlencode(n)) } { "Next page" } }
        }
        h2 { "Delete" }
        form.card method="post" action={ (class.path()) "/" (id) "/delete" } data-confirm="Delete it? Receivers keep the last value they got; the key stays reserved." {
            (csrf_field(&s))
            p { "Nothing is sent on delete: receivers keep the last value they got. The key stays reserved." }
            button.danger type="submit" { "Delete" }
        }
    };
    Ok(page(Some(&s), &name, class.nav(), body).into_response())
}

pub async fn connect(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    class: Class,
    PagePath((id, destination_id)): PagePath<(String, String)>,
    form: Form,
) -> PageResult {
    check_csrf(&s, &form)?;
    let on = form.get("on") == "1";
    let _view = api::connect(
        State(dash.app.clone()),
        s.actor.clone(),
        class.name(),
        PathParam((id.clone(), destination_id)),
        on,
    )
    .await?;
    Ok(see_other(&format!(
        "{}/{}?connected=1",
        class.path(),
        urlencode(&id)
    )))
}

pub async fn delete(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    class: Class,
    PagePath(id): PagePath<String>,
    form: Form,
) -> PageResult {
    check_csrf(&s, &form)?;
    api::delete(
        State(dash.app.clone()),
        s.actor.clone(),
        class.name(),
        PathParam(id),
    )
    .await?;
    Ok(see_other(class.path()))
}
