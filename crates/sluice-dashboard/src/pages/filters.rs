//! Destination filters on the destination page: the list (in order), a form
//! to add one, and delete. Every change replaces the whole filter document
//! through the admin API's handler, so the dashboard refuses what the API
//! refuses, with its message (e.g. `filters[1].when.op: unknown operator`).

use sluice_api::path_param::PathParam;
use std::sync::Arc;

use axum::extract::State;
use axum::response::IntoResponse;
use maud::{Markup, html};
use serde_json::{Map, Value, json};
use sluice_api::ApiError;
use sluice_api::admin::extract::JsonObject;
use sluice_api::admin::schema as api;

use crate::Dash;
use crate::form::Form;
use crate::layout::{PagePath, PageResult, SignedIn, check_csrf, csrf_field, page, see_other};
use crate::session::Session;
use crate::widgets::{api_error, compact, lines, typed_value};
use sluice_api::principal::Actor;

const OPS: &[&str] = &[
    "eq",
    "ne",
    "in",
    "not_in",
    "gt",
    "gte",
    "lt",
    "lte",
    "contains",
    "exists",
    "not_exists",
];

/// An operator as the dashboard words it: the audience and computed-trait
/// builders say `equals` and `not_equals`, so the filters do too (the
/// filter document keeps the API's `eq` and `ne`).
fn op_word(op: &str) -> &str {
    match op {
        "eq" => "equals",
        "ne" => "not_equals",
        other => other,
    }
}

/// What was typed into the add form, kept to show it again with an error.
#[derive(Default)]
pub struct Draft {
    name: String,
    action: String,
    field: String,
    op: String,
    value: String,
    fields: String,
}

impl Draft {
    fn from_form(f: &Form) -> Draft {
        Draft {
            name: f.get("name").to_owned(),
            action: f.get("action").to_owned(),
            field: f.get("field").to_owned(),
            op: f.get("op").to_owned(),
            value: f.raw("value").to_owned(),
            fields: f.raw("fields").to_owned(),
        }
    }

    /// The filter as the API's document takes it. `in`/`not_in` take one
    /// value per line; numbers, `true`, `false` and `null` keep their type.
    fn to_json(&self) -> Value {
        let mut f = Map::new();
        f.insert("name".into(), json!(self.name));
        f.insert("action".into(), json!(self.action));
        if !self.field.is_empty() || self.action == "drop" {
            let mut when = Map::new();
            when.insert("field".into(), json!(self.field));
            when.insert("op".into(), json!(self.op));
            match self.op.as_str() {
                "in" | "not_in" => {
                    let vals: Vec<Value> =
                        lines(&self.value).iter().map(|l| typed_value(l)).collect();
                    when.insert("values".into(), Value::Array(vals));
                }
                "exists" | "not_exists" => {}
                _ => {
                    when.insert("value".into(), typed_value(&self.value));
                }
            }
            f.insert("when".into(), Value::Object(when));
        }
        if self.action == "drop_fields" {
            f.insert("fields".into(), json!(lines(&self.fields)));
        }
        Value::Object(f)
    }
}

fn describe_when(w: &Value) -> String {
    if w.is_null() {
        return "always".to_owned();
    }
    let op = w["op"].as_str().unwrap_or("");
    let what = if let Some(vals) = w["values"].as_array() {
        vals.iter().map(compact).collect::<Vec<_>>().join(", ")
    } else if w.get("value").is_some() {
        compact(&w["value"])
    } else {
        String::new()
    };
    format!(
        "{} {} {}",
        w["field"].as_str().unwrap_or(""),
        op_word(op),
        what
    )
    .trim_end()
    .to_owned()
}

/// The filters section of the destination page.
pub fn section(s: &Session, id: &str, doc: &Value) -> Markup {
    let filters = doc["filters"].as_array().cloned().unwrap_or_default();
    html! {
        h2 #filters-h { "Filters" }
        p { "Decided at ingest, in order, for this destination only: the first matching " strong { "drop" } " filter drops the event (its delivery is recorded as " code { "filtered" } "); every matching " strong { "drop fields" } " filter removes fields from what this destination is sent. The stored event keeps everything." }
        @if filters.is_empty() {
            p #no-filters { "No filters: every routed call is sent whole." }
        } @else {
            div.table-wrap {
                table #filters {
                    caption.sr-only { "Filters, in order" }
                    thead { tr { th scope="col" { "Name" } th scope="col" { "Action" } th scope="col" { "When" } th scope="col" { "Fields removed" } th scope="col" { span.sr-only { "Delete" } } } }
                    tbody {
                        @for f in &filters {
                            @let name = f["name"].as_str().unwrap_or("");
                            tr {
                                td.wrap { (name) }
                                td { @if f["action"] == json!("drop") { "drop" } @else { "drop fields" } }
                                td.wrap { code { (describe_when(&f["when"])) } }
                                td.wrap { (f["fields"].as_array().map(|a| a.iter().map(compact).collect::<Vec<_>>().join(", ")).unwrap_or_default()) }
                                td {
                                    form.inline method="post" action={ "/destinations/" (id) "/filters/delete" } data-confirm={ "Delete the filter '" (name) "'?" } {
                                        (csrf_field(s))
                                        input type="hidden" name="name" value=(name);
                                        button.small.secondary type="submit" aria-label={ "Delete filter " (name) } { "Delete" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        (add_form(s, id, &Draft::default(), None))
    }
}

fn add_form(s: &Session, id: &str, d: &Draft, error: Option<&ApiError>) -> Markup {
    html! {
        form.card #add-filter method="post" action={ "/destinations/" (id) "/filters" } {
            (csrf_field(s))
            h3 { "Add a filter" }
            @if let Some(e) = error { (api_error(e)) }
            div.field {
                label for="filter-name" { "Filter name" }
                input #filter-name name="name" value=(d.name) required maxlength="200";
            }
            div.field {
                label for="filter-action" { "Action" }
                select #filter-action name="action" {
                    option value="drop" selected[d.action != "drop_fields"] { "Drop the event" }
                    option value="drop_fields" selected[d.action == "drop_fields"] { "Drop fields" }
                }
            }
            fieldset {
                legend { "When (required to drop; optional for drop fields)" }
                div.field {
                    label for="filter-field" { "Field" }
                    input #filter-field name="field" value=(d.field) placeholder="type, event or properties.plan" aria-describedby="filter-field-help";
                    p.help #filter-field-help { code { "type" } " (call type), " code { "event" } " (event, page or screen name), or a path such as " code { "properties.env" } "." }
                }
                div.field {
                    label for="filter-op" { "Operator" }
                    select #filter-op name="op" {
                        @for op in OPS { option value=(op) selected[d.op == *op] { (op_word(op)) } }
                    }
                }
                div.field {
                    label for="filter-value" { "Value" }
                    textarea #filter-value name="value" rows="2" aria-describedby="filter-value-help" { (d.value) }
                    p.help #filter-value-help { "For in and not_in, one value per line. Numbers, true, false and null keep their type; quote them (\"10\") for text." }
                }
            }
            div.field {
                label for="filter-fields" { "Fields to remove (drop fields)" }
                textarea #filter-fields name="fields" rows="3" aria-describedby="filter-fields-help" { (d.fields) }
                p.help #filter-fields-help { "One path per line, e.g. properties.email or context.ip." }
            }
            button type="submit" { "Add filter" }
        }
    }
}

async fn current(dash: &Dash, id: &str) -> PageResult<Vec<Value>> {
    let doc = api::get_filters(State(dash.app.clone()), PathParam(id.to_owned()))
        .await?
        .0;
    Ok(doc["filters"].as_array().cloned().unwrap_or_default())
}

async fn save(dash: &Dash, actor: &Actor, id: &str, filters: Vec<Value>) -> Result<(), ApiError> {
    let mut body = Map::new();
    body.insert("filters".into(), Value::Array(filters));
    let _saved = api::put_filters(
        State(dash.app.clone()),
        actor.clone(),
        PathParam(id.to_owned()),
        JsonObject(body),
    )
    .await?;
    Ok(())
}

pub async fn add(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    PagePath(id): PagePath<String>,
    form: Form,
) -> PageResult {
    check_csrf(&s, &form)?;
    let draft = Draft::from_form(&form);
    let mut filters = current(&dash, &id).await?;
    filters.push(draft.to_json());
    match save(&dash, &s.actor, &id, filters).await {
        Ok(()) => Ok(see_other(&format!(
            "/destinations/{id}?filtered=1#filters-h"
        ))),
        Err(e) if e.status.is_client_error() => {
            let body = html! {
                p { a href={ "/destinations/" (id) } { "Back to the destination" } }
                (add_form(&s, &id, &draft, Some(&e)))
            };
            Ok((
                e.status,
                page(Some(&s), "Add a filter", "destinations", body),
            )
                .into_response())
        }
        Err(e) => Err(e.into()),
    }
}

pub async fn delete(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    PagePath(id): PagePath<String>,
    form: Form,
) -> PageResult {
    check_csrf(&s, &form)?;
    let name = form.raw("name");
    let mut filters = current(&dash, &id).await?;
    filters.retain(|f| f["name"].as_str() != Some(name));
    save(&dash, &s.actor, &id, filters).await?;
    Ok(see_other(&format!(
        "/destinations/{id}?filtered=1#filters-h"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn draft(action: &str, field: &str, op: &str, value: &str, fields: &str) -> Draft {
        Draft {
            name: "f".into(),
            action: action.into(),
            field: field.into(),
            op: op.into(),
            value: value.into(),
            fields: fields.into(),
        }
    }

    #[test]
    fn drafts_become_the_api_document() {
        assert_eq!(
            draft("drop", "event", "not_in", "A\nB\n", "").to_json(),
            json!({"name":"f","action":"drop","when":{"field":"event","op":"not_in","values":["A","B"]}})
        );
        assert_eq!(
            draft("drop", "properties.total", "gt", "10", "").to_json(),
            json!({"name":"f","action":"drop","when":{"field":"properties.total","op":"gt","value":10}})
        );
        assert_eq!(
            draft("drop_fields", "", "eq", "", "properties.email\ncontext.ip").to_json(),
            json!({"name":"f","action":"drop_fields","fields":["properties.email","context.ip"]})
        );
    }

    #[test]
    fn conditions_read_as_a_sentence() {
        assert_eq!(
            describe_when(&json!({"field":"type","op":"in","values":["identify","group"]})),
            "type in identify, group"
        );
        assert_eq!(describe_when(&Value::Null), "always");
        assert_eq!(
            describe_when(&json!({"field":"properties.env","op":"ne","value":"test"})),
            "properties.env not_equals test"
        );
    }
}
