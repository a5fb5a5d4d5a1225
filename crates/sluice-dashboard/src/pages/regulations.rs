//! `/regulations`: user deletion and suppression requests (create, list with
//! status, one regulation's subjects and delete notifications), and
//! `/suppressions`: the suppression list, a page at a time. Everything goes
//! through the admin API's regulation handlers: same checks, same messages.

use sluice_api::path_param::PathParam;
use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use maud::{Markup, html};
use serde_json::{Map, Value, json};
use sluice_api::ApiError;
use sluice_api::admin::extract::Params;
use sluice_api::admin::regulations::{self as api, MAX_REGULATION_BODY, RegulationBody};

use crate::Dash;
use crate::form::FormUpTo;
use crate::layout::{
    PagePath, PageResult, SignedIn, check_csrf_token, csrf_field, page, see_other, urlencode,
};
use crate::session::Session;
use crate::widgets::{api_error, lines};

/// Regulation types with what each does, as `docs/privacy.md` lists them.
const TYPES: &[(&str, &str)] = &[
    (
        "SUPPRESS_WITH_DELETE",
        "suppress, purge stored data, notify destinations",
    ),
    ("DELETE_ONLY", "purge stored data, notify destinations"),
    ("SUPPRESS_ONLY", "suppress: drop their future calls"),
    ("UNSUPPRESS", "lift a suppression"),
    ("DELETE_INTERNAL", "purge stored data, notify nobody"),
    (
        "SUPPRESS_WITH_DELETE_INTERNAL",
        "suppress and purge, notify nobody",
    ),
];
/// Suppressed ids per page.
const SUPPRESSIONS_PAGE: u32 = 100;

fn status_pill(status: &str) -> Markup {
    html! { span class={ "pill " (status.to_ascii_lowercase()) } { (status) } }
}

fn short_time(v: &Value) -> String {
    v.as_str()
        .map(|t| t.get(..19).unwrap_or(t).replace('T', " "))
        .unwrap_or_default()
}

/// What was typed, kept to show the form again with the API's refusal.
#[derive(Default)]
struct Draft {
    kind: String,
    ids: String,
    source: String,
    /// Why the ids were not taken, said on their field.
    ids_error: Option<String>,
}

/// The form and a page of the regulations, newest first: those older
/// than `before` when given (the API's cursor).
async fn list_page(
    dash: &Dash,
    s: &Session,
    draft: &Draft,
    error: Option<&ApiError>,
    before: Option<&str>,
) -> PageResult<Markup> {
    let query = before
        .map(|b| ("before".to_owned(), b.to_owned()))
        .into_iter()
        .collect();
    let listed = api::list(State(dash.app.clone()), Params(query)).await?.0;
    let sources = dash.app.store.list_sources().await?;
    let names: HashMap<&str, &str> = sources
        .iter()
        .map(|s| (s.id.as_str(), s.name.as_str()))
        .collect();
    let regs = listed["data"].as_array().cloned().unwrap_or_default();
    Ok(html! {
        p { "Delete or suppress users by userId, as Segment's Regulations API does. Suppression drops their future calls on every source at once; a purge deletes their stored events, deliveries, attempt log and profile, and may notify the connected destinations. See the suppressed ids in the " a href="/suppressions" { "suppression list" } "." }
        h2 #new-h { "New regulation" }
        form.card method="post" action="/regulations" aria-labelledby="new-h" data-confirm="Create this regulation? A purge cannot be undone." {
            (csrf_field(s))
            @if let Some(e) = error { (api_error(e)) }
            div.field {
                label for="reg-type" { "Type" }
                select #reg-type name="regulationType" {
                    @for (t, what) in TYPES { option value=(t) selected[draft.kind == *t] { (t) " — " (what) } }
                }
            }
            div.field {
                label for="reg-ids" { "User ids" }
                textarea #reg-ids name="subjectIds" rows="4" required
                    aria-invalid=[draft.ids_error.as_ref().map(|_| "true")]
                    aria-describedby=(if draft.ids_error.is_some() { "reg-ids-help reg-ids-error" } else { "reg-ids-help" }) { (draft.ids) }
                p.help #reg-ids-help { "One userId per line, up to 5,000 ids of up to 1,024 bytes each." }
                @if let Some(m) = &draft.ids_error { p #reg-ids-error .field-error role="alert" { (m) } }
            }
            // Shown by the script, which reads the file into the field above.
            div.field hidden {
                label for="reg-ids-file" { "Or load the ids from a file" }
                input #reg-ids-file type="file" accept=".txt,.csv,text/plain,text/csv" data-fill="reg-ids" aria-describedby="reg-ids-file-help";
                p.help #reg-ids-file-help { "A text file with one userId per line; it fills the field above, where you can check it before creating." }
            }
            div.field {
                label for="reg-source" { "Source (optional)" }
                select #reg-source name="source_id" aria-describedby="reg-source-help" {
                    option value="" { "All sources" }
                    @for src in &sources { option value=(src.id) selected[draft.source == src.id] { (src.name) } }
                }
                p.help #reg-source-help { "Limits the purge to one source's data. Suppression always applies to every source." }
            }
            button type="submit" { "Create regulation" }
        }
        h2 { "Regulations" }
        @if regs.is_empty() {
            p #no-regulations { "No regulations yet." }
        } @else {
            div.table-wrap {
                table #regulations {
                    caption.sr-only { "Regulations, newest first" }
                    thead { tr {
                        th scope="col" { "Id" } th scope="col" { "Type" } th scope="col" { "Status" }
                        th scope="col" .num { "Subjects done" } th scope="col" { "Source" } th scope="col" { "Created (UTC)" }
                    } }
                    tbody {
                        @for r in &regs {
                            @let id = r["id"].as_str().unwrap_or("");
                            tr {
                                td { a href={ "/regulations/" (id) } { code { (id) } } }
                                td { (r["regulationType"].as_str().unwrap_or("")) }
                                td { (status_pill(r["status"].as_str().unwrap_or(""))) }
                                td.num { (r["subjectsDone"]) " of " (r["subjects"]) }
                                td { @match r["source_id"].as_str() { Some(sid) => (names.get(sid).copied().unwrap_or(sid)), None => "All" } }
                                td { (short_time(&r["createdAt"])) }
                            }
                        }
                    }
                }
            }
        }
        p.actions {
            @if before.is_some() { a href="/regulations" { "Newest" } }
            @if let Some(next) = listed["next_before"].as_str() {
                " " a #older href={ "/regulations?before=" (urlencode(next)) } { "Older" }
            }
        }
    })
}

pub async fn list(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    Query(q): Query<HashMap<String, String>>,
) -> PageResult {
    let before = q.get("before").map(String::as_str);
    let body = list_page(&dash, &s, &Draft::default(), None, before).await?;
    Ok(page(Some(&s), "Regulations", "regulations", body).into_response())
}

pub async fn create(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    FormUpTo(form): FormUpTo<MAX_REGULATION_BODY>,
) -> PageResult {
    check_csrf_token(&s, &form)?;
    let mut draft = Draft {
        kind: form.get("regulationType").to_owned(),
        ids: form.raw("subjectIds").to_owned(),
        source: form.get("source_id").to_owned(),
        ids_error: None,
    };
    if let Some(o) = &form.overflow {
        // Nothing cut short is acted on; what came whole is shown again.
        draft.ids_error = Some(format!(
            "The form came to more than {}, so nothing was created{}. Split the ids into several regulations, or send them through the admin API.",
            o.limit_text(),
            if o.field == "subjectIds" {
                " and the ids could not be kept"
            } else {
                ""
            },
        ));
        let body = list_page(&dash, &s, &draft, None, None).await?;
        return Ok((
            StatusCode::PAYLOAD_TOO_LARGE,
            page(Some(&s), "Regulations", "regulations", body),
        )
            .into_response());
    }
    let mut body = Map::new();
    body.insert("regulationType".into(), json!(draft.kind));
    body.insert("subjectType".into(), json!("USER_ID"));
    body.insert("subjectIds".into(), json!(lines(&draft.ids)));
    if !draft.source.is_empty() {
        body.insert("source_id".into(), json!(draft.source));
    }
    match api::create(
        State(dash.app.clone()),
        s.actor.clone(),
        RegulationBody(body),
    )
    .await
    {
        Ok((_, created)) => {
            let id = created.0["id"].as_str().unwrap_or("").to_owned();
            Ok(see_other(&format!(
                "/regulations/{}?created=1",
                urlencode(&id)
            )))
        }
        Err(e) if e.status.is_client_error() => {
            let body = list_page(&dash, &s, &draft, Some(&e), None).await?;
            Ok((e.status, page(Some(&s), "Regulations", "regulations", body)).into_response())
        }
        Err(e) => Err(e.into()),
    }
}

pub async fn show(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    PagePath(id): PagePath<String>,
    Params(q): Params,
) -> PageResult {
    let r = api::get(State(dash.app.clone()), PathParam(id.clone()))
        .await?
        .0;
    let sources = dash.app.store.list_sources().await?;
    let destinations = dash.app.store.list_destinations().await?;
    let source_name = |sid: &str| {
        sources
            .iter()
            .find(|s| s.id == sid)
            .map_or(sid.to_owned(), |s| s.name.clone())
    };
    let dest_name = |did: &str| {
        destinations
            .iter()
            .find(|d| d.id == did)
            .map_or(did.to_owned(), |d| d.name.clone())
    };
    let status = r["status"].as_str().unwrap_or("");
    let open = status != "FINISHED" && status != "FAILED";
    let suppresses = r["regulationType"]
        .as_str()
        .is_some_and(sluice_api::admin::regulations::suppresses_and_purges);
    let subjects = r["subjectDetails"].as_array().cloned().unwrap_or_default();
    let notes = r["notifications"].as_array().cloned().unwrap_or_default();
    let body = html! {
        @if q.contains_key("created") {
            div.notice role="status" { p { "Regulation recorded. Its suppression change already applies; the purge runs in the background." } }
        }
        dl.facts #regulation data-refresh=[open.then_some("2000")] {
            dt { "Type" } dd { (r["regulationType"].as_str().unwrap_or("")) }
            dt { "Status" } dd #reg-status { (status_pill(status)) }
            dt { "Subjects done" } dd { (r["subjectsDone"]) " of " (r["subjects"]) }
            dt { "Source" } dd { @match r["source_id"].as_str() { Some(sid) => (source_name(sid)), None => "All sources" } }
            dt { "Created (UTC)" } dd { (short_time(&r["createdAt"])) }
            dt { "Finished (UTC)" } dd { @if r["finishedAt"].is_null() { "Not yet" } @else { (short_time(&r["finishedAt"])) } }
        }
        @if open && status == "INITIALIZED" && suppresses {
            p.help #settling { "The purge starts once the suppression holds on every node and every call accepted before it has been stored: storage.timeout_ms plus a second after creation (about 11 s by default)." }
        }
        @if open { p.help { "This page refreshes until the regulation finishes." } }
        h2 { "Subjects" }
        p.help { "A finished subject is kept only as the SHA-256 of its id." }
        div.table-wrap {
            table #subjects {
                caption.sr-only { "Subjects and what was found for each" }
                thead { tr { th scope="col" { "Subject" } th scope="col" { "Done" } th scope="col" { "Sources holding their data" } th scope="col" .num { "Events purged" } } }
                tbody {
                    @for sub in &subjects {
                        tr {
                            td.wrap { code { (sub["subjectId"].as_str().unwrap_or("")) } }
                            td { @if sub["done"] == json!(true) { "Yes" } @else { "No" } }
                            td.wrap {
                                @let affected = sub["affectedSources"].as_array().cloned().unwrap_or_default();
                                @if affected.is_empty() { "None" }
                                @for (i, a) in affected.iter().enumerate() { @if i > 0 { ", " } (source_name(a.as_str().unwrap_or(""))) }
                            }
                            td.num { (sub["eventsPurged"]) }
                        }
                    }
                }
            }
        }
        h2 { "Delete notifications" }
        @if notes.is_empty() && open {
            p #no-notifications { "None yet: they are sent as the purge reaches each subject." }
        } @else if notes.is_empty() {
            p #no-notifications { "None sent: the type notifies nobody, or no connected destination received this user's data." }
        } @else {
            div.table-wrap {
                table #notifications {
                    caption.sr-only { "One notification per subject and destination, with the affected sources that reach it" }
                    thead { tr { th scope="col" { "Subject" } th scope="col" { "Sources" } th scope="col" { "Destination" } th scope="col" { "State" } th scope="col" .num { "Attempt rounds" } } }
                    tbody {
                        @for n in &notes {
                            @let did = n["destination_id"].as_str().unwrap_or("");
                            tr {
                                td.wrap { code { (n["subjectId"].as_str().unwrap_or("")) } }
                                td.wrap {
                                    @let sources = n["source_ids"].as_array().cloned().unwrap_or_else(|| vec![n["source_id"].clone()]);
                                    @for (i, sid) in sources.iter().enumerate() { @if i > 0 { ", " } (source_name(sid.as_str().unwrap_or(""))) }
                                }
                                td { a href={ "/destinations/" (did) "/deliveries" } { (dest_name(did)) } " (delivery " (n["delivery_id"]) ")" }
                                td { span class={ "pill " (n["state"].as_str().unwrap_or("")) } { (n["state"].as_str().unwrap_or("")) } }
                                td.num { (n["attempts"]) }
                            }
                        }
                    }
                }
            }
        }
        p { a href="/regulations" { "All regulations" } }
    };
    Ok(page(Some(&s), &format!("Regulation {id}"), "regulations", body).into_response())
}

pub async fn suppressions(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    Params(q): Params,
) -> PageResult {
    let after = q.get("after").cloned().unwrap_or_default();
    let params = HashMap::from([
        ("after".to_owned(), after.clone()),
        ("limit".to_owned(), SUPPRESSIONS_PAGE.to_string()),
    ]);
    let out = api::suppressions(State(dash.app.clone()), Params(params))
        .await?
        .0;
    let ids: Vec<String> = out["data"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let body = html! {
        p { "User ids whose calls are dropped on every source (answered 200, counted as suppressed, never stored). Lift one with an " code { "UNSUPPRESS" } " " a href="/regulations" { "regulation" } "." }
        @if ids.is_empty() {
            p #no-suppressions { @if after.is_empty() { "Nobody is suppressed." } @else { "No more ids." } }
        } @else {
            ul.plain #suppressions { @for id in &ids { li { code { (id) } } } }
        }
        p.actions {
            @if !after.is_empty() { a href="/suppressions" { "First page" } }
            @if let Some(next) = out["next"].as_str() { a href={ "/suppressions?after=" (urlencode(next)) } { "Next page" } }
        }
    };
    Ok(page(Some(&s), "Suppression list", "regulations", body).into_response())
}
