//! `/sources`: the list, creation, a source's page and key rotation. The
//! write key appears once, in the answer to creation or rotation, with a
//! copy button; afterwards only its first characters.
//!
//! The rotation form names the key it rotates (its shown start): sent
//! again, as a page reload sends it, it finds another key and changes
//! nothing, so the key just shown stays the one that works. The creation
//! form carries the id of the source it creates, drawn when the form is
//! shown: sent again, it finds that source (the store refuses a second
//! source of one id, on every node) and leads to it instead of making a
//! second one.

use sluice_api::path_param::PathParam;
use std::sync::Arc;

use std::collections::HashMap;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use maud::{Markup, html};
use serde_json::{Map, Value};
use sluice_api::admin::sources::{self as api, SourceView};
use sluice_store::{Source, keys};

use crate::Dash;
use crate::form::Form;
use crate::layout::{
    PagePath, PageResult, SignedIn, check_csrf, csrf_field, page, see_other, when,
};
use crate::session::{Session, is_https};
use crate::widgets::{list_page, pager};

/// The id a creation form will create: drawn when the form is shown.
fn new_form_id() -> String {
    keys::new_id("src")
}

/// The id a creation form carried, if it has the shape of one this page
/// draws (anything else gets a fresh id: the form is then an ordinary one).
fn form_id(form: &Form) -> String {
    let id = form.get("id");
    let drawn = id
        .strip_prefix("src_")
        .is_some_and(|rest| rest.len() == 16 && rest.bytes().all(|b| b.is_ascii_alphanumeric()));
    if drawn { id.to_owned() } else { new_form_id() }
}

fn list_body(s: &Session, sources: &[Source], form: (&str, &str), error: Option<&str>) -> Markup {
    let (id, name) = form;
    html! {
        @if sources.is_empty() {
            p { "No sources yet. A source stands for one app or site; its write key authenticates the calls it sends." }
        } @else {
            div.table-wrap {
                table {
                    caption.sr-only { "Sources" }
                    thead { tr { th scope="col" { "Name" } th scope="col" { "Write key" } th scope="col" { "State" } th scope="col" { "Created" } th scope="col" { "Watch" } } }
                    tbody {
                        @for src in sources {
                            tr {
                                td { a href={ "/sources/" (src.id) } { (src.name) } }
                                td { code { (src.write_key_hint) } }
                                td { @if src.enabled { "Enabled" } @else { "Disabled" } }
                                td { (when(&src.created_at)) }
                                td { a href={ "/sources/" (src.id) "/debugger" } { "Debugger" } " · " a href={ "/usage?source=" (src.id) } { "Usage" } }
                            }
                        }
                    }
                }
            }
        }
        h2 { "New source" }
        form.card method="post" action="/sources" {
            (csrf_field(s))
            input type="hidden" name="id" value=(id);
            div.field {
                label for="name" { "Name" }
                input #name name="name" value=(name) required maxlength="200"
                    aria-invalid=[error.map(|_| "true")] aria-describedby=[error.map(|_| "name-error")];
                @if let Some(e) = error { p #name-error .field-error role="alert" { (e) } }
            }
            button type="submit" { "Create source" }
        }
    }
}

pub async fn list(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    Query(q): Query<HashMap<String, String>>,
) -> PageResult {
    let all = dash.app.store.list_sources().await?;
    let sources = list_page(all, |s| s.id.as_str(), &q)?;
    let body = html! {
        @if q.contains_key("deleted") {
            div.notice role="status" { p { "Source deleted." } }
        }
        (list_body(&s, &sources.data, (&new_form_id(), ""), None))
        (pager("/sources", &sources, &q))
    };
    Ok(page(Some(&s), "Sources", "sources", body).into_response())
}

pub async fn create(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    headers: HeaderMap,
    form: Form,
) -> PageResult {
    check_csrf(&s, &form)?;
    let mut body = Map::new();
    body.insert("name".into(), Value::String(form.get("name").to_owned()));
    let id = form_id(&form);
    match api::create_as(&dash.app, &s.actor, id.clone(), &body).await {
        Ok((_, json)) => {
            let base = base_url(&headers, dash.app.trust_forwarded_for);
            Ok(key_once(&s, &json.0, "Source created", &base).into_response())
        }
        Err(e) if e.status == StatusCode::BAD_REQUEST => {
            let all = dash.app.store.list_sources().await?;
            let first = list_page(all, |s| s.id.as_str(), &HashMap::new())?;
            let markup = list_body(&s, &first.data, (&id, form.get("name")), Some(&e.message));
            Ok((e.status, page(Some(&s), "Sources", "sources", markup)).into_response())
        }
        Err(e)
            if e.status == StatusCode::CONFLICT
                && dash.app.store.get_source(&id).await?.is_some() =>
        {
            Ok(see_other(&format!("/sources/{id}?again=1")))
        }
        Err(e) => Err(e.into()),
    }
}

/// This server's address as the browser reached it, for a command to paste.
fn base_url(headers: &HeaderMap, trust_proxy: bool) -> String {
    let host = headers
        .get("host")
        .and_then(|h| h.to_str().ok())
        .filter(|h| !h.is_empty() && !h.contains(['/', ' ', '\'', '"']))
        .unwrap_or("127.0.0.1:8088");
    let scheme = if is_https(headers, trust_proxy) {
        "https"
    } else {
        "http"
    };
    format!("{scheme}://{host}")
}

/// The one page that shows a write key in full.
fn key_once(
    s: &Session,
    source: &SourceView,
    title: &str,
    base: &str,
) -> impl IntoResponse + use<> {
    let id = source.id.as_str();
    let key = source.write_key.as_deref().unwrap_or("");
    let body = html! {
        div.notice role="status" {
            p { strong { "Copy the write key now: it is shown only once." } " Sluice keeps only its hash." }
        }
        dl.facts {
            dt { "Source" } dd { a href={ "/sources/" (id) } { (source.name) } }
            dt { "Write key" }
            dd.copyable {
                code #write-key { (key) }
                button.copy type="button" data-copy="write-key" hidden { "Copy key" }
            }
        }
        h2 { "Try it" }
        div.copyable {
            pre #curl-example { code { "curl -u '" (key) ":' -H 'Content-Type: application/json' \\\n  -d '{\"userId\":\"u1\",\"event\":\"Signed Up\"}' \\\n  " (base) "/v1/track" } }
            button.copy type="button" data-copy="curl-example" hidden { "Copy command" }
        }
        p { a href={ "/sources/" (id) "/debugger" } { "Open the live debugger" } " to watch the calls arrive." }
    };
    page(Some(s), title, "sources", body)
}

pub async fn show(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    PagePath(id): PagePath<String>,
    Query(q): Query<HashMap<String, String>>,
) -> PageResult {
    let src = api::get(State(dash.app.clone()), PathParam(id.clone()))
        .await?
        .0;
    let destinations = dash.app.store.list_destinations().await?;
    let connected: Vec<_> = destinations
        .iter()
        .filter(|d| d.source_ids.contains(&id))
        .collect();
    let body = html! {
        @if q.contains_key("renamed") {
            div.notice role="status" { p { "Source renamed." } }
        }
        @if q.contains_key("again") {
            div.notice role="status" {
                p { strong { "This source was already created" } " by the form you sent again (reloading the page that showed its write key sends it again), so no second one was made. Its write key was shown once, on that page; if you did not keep it, rotate it below." }
            }
        }
        dl.facts {
            dt { "Id" } dd { code { (id) } }
            dt { "Write key" } dd { code { (src.write_key_hint) } " (only the first characters are kept for display)" }
            dt { "State" } dd { @if src.enabled { "Enabled" } @else { "Disabled" } }
        }
        p.actions {
            a.button href={ "/sources/" (id) "/debugger" } { "Live debugger" }
            a.button.secondary href={ "/sources/" (id) "/schema" } { "Schema" }
            a.button.secondary href={ "/usage?source=" (id) } { "Usage" }
        }
        h2 { "Connected destinations" }
        @if connected.is_empty() {
            p { "None. " a href="/catalog" { "Add a destination" } " to forward this source's calls." }
        } @else {
            ul { @for d in &connected { li { a href={ "/destinations/" (d.id) } { (d.name) } " — " @if d.enabled { "on" } @else { "off" } } } }
        }
        h2 { "Rotate the write key" }
        form.card method="post" action={ "/sources/" (id) "/rotate-key" } data-confirm="Rotate the write key? The current key stops working at once." {
            (csrf_field(&s))
            input type="hidden" name="key" value=(src.write_key_hint);
            p { "A new key is generated and shown once; the current key stops working at once." }
            button.danger type="submit" { "Rotate key" }
        }
        (manage(&s, &id, &src))
    };
    let title = src.name.clone();
    Ok(page(Some(&s), &title, "sources", body).into_response())
}

/// Rename, disable or enable, delete: each leads to a confirmation page
/// that says what goes with it (see [`super::lifecycle`]).
fn manage(s: &Session, id: &str, src: &SourceView) -> Markup {
    html! {
        h2 #manage { "Manage this source" }
        form.card method="post" action={ "/sources/" (id) "/rename" } {
            (csrf_field(s))
            div.field {
                label for="new-name" { "New name" }
                input #new-name name="name" value=(src.name) required maxlength="200";
            }
            button.secondary type="submit" { "Rename…" }
        }
        form.card method="post" action={ "/sources/" (id) "/enabled" } {
            (csrf_field(s))
            @if src.enabled {
                p { "Disabling refuses calls sent with its write key; nothing stored is lost." }
                input type="hidden" name="enabled" value="false";
                button.secondary type="submit" { "Disable…" }
            } @else {
                p { "Disabled: calls sent with its write key are refused." }
                input type="hidden" name="enabled" value="true";
                button type="submit" { "Enable…" }
            }
        }
        form.card method="post" action={ "/sources/" (id) "/delete" } {
            (csrf_field(s))
            p { "Deleting stops its write key and removes its schema, rules and usage." }
            button.danger type="submit" { "Delete source…" }
        }
    }
}

pub async fn rotate(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    PagePath(id): PagePath<String>,
    headers: HeaderMap,
    form: Form,
) -> PageResult {
    check_csrf(&s, &form)?;
    let current = api::get(State(dash.app.clone()), PathParam(id.clone()))
        .await?
        .0;
    if current.write_key_hint != form.get("key") {
        let body = html! {
            div.error role="alert" {
                p { strong { "The write key was not rotated again." } " It changed after this form was shown: the form was sent twice (reloading the page that showed the new key sends it again), or someone else rotated it." }
                p { "The key shown when it was rotated is the one that works; it starts with " code { (current.write_key_hint) } "." }
            }
            p { a href={ "/sources/" (id) } { "Back to the source" } }
        };
        return Ok((
            StatusCode::CONFLICT,
            page(Some(&s), "Write key not rotated", "sources", body),
        )
            .into_response());
    }
    let json = api::rotate_key(State(dash.app.clone()), s.actor.clone(), PathParam(id))
        .await?
        .0;
    let base = base_url(&headers, dash.app.trust_forwarded_for);
    Ok(key_once(&s, &json, "Write key rotated", &base).into_response())
}
