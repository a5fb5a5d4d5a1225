//! The builder of computed traits and audiences: one form per class,
//! "Preview" asks the admin API for a dry run (count and a sample of people,
//! nothing saved) and shows it above the form, still filled; "Save" creates
//! the definition through the same handler.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};
use serde_json::Value;
use sluice_api::ApiError;
use sluice_api::admin::extract::JsonObject;
use sluice_api::admin::personas::computations as api;
use sluice_store::Destination;

use super::Class;
use super::draft::{COUNT_OPS, Draft, FILTER_OPS, TRAIT_KINDS, UNITS, WHERE_ROWS};
use crate::Dash;
use crate::form::Form;
use crate::layout::{PageResult, SignedIn, check_csrf, csrf_field, page, see_other, urlencode};
use crate::session::Session;
use crate::widgets::{api_error, compact, plural, pretty};

fn select(id: &str, name: &str, options: &[(&str, &str)], current: &str) -> Markup {
    html! {
        select id=(id) name=(name) {
            @for (v, label) in options { option value=(v) selected[current == *v] { (label) } }
        }
    }
}

fn ops(id: &str, name: &str, current: &str) -> Markup {
    let options: Vec<(&str, &str)> = FILTER_OPS.iter().map(|o| (*o, *o)).collect();
    select(id, name, &options, current)
}

fn window_fields(d: &Draft, help: &str) -> Markup {
    let units: Vec<(&str, &str)> = UNITS.iter().map(|u| (*u, *u)).collect();
    html! {
        fieldset.rows {
            legend { "Window (optional)" }
            div.row {
                div.field { label for="window_n" { "Last" } input #window_n name="window_n" inputmode="numeric" value=(d.window_n) aria-describedby="window-help"; }
                div.field { label for="window_unit" { "Unit" } (select("window_unit", "window_unit", &units, &d.window_unit)) }
            }
            p.help #window-help { (help) }
        }
    }
}

fn trait_fields(d: &Draft) -> Markup {
    html! {
        div.field { label for="kind" { "Kind" } (select("kind", "kind", TRAIT_KINDS, &d.kind)) }
        div.field { label for="event" { "Track event" } input #event name="event" value=(d.event) required; }
        div.field {
            label for="property" { "Property (all kinds but counter)" }
            input #property name="property" value=(d.property) placeholder="total" aria-describedby="property-help";
            p.help #property-help { "A key of the event's properties; a dotted path reaches inside (address.city)." }
        }
        fieldset.rows {
            legend { "Only events where (optional, all must hold)" }
            @for i in 0..WHERE_ROWS {
                @let (p, o, v) = d.filter(i);
                div.row {
                    div.field { label for={ "w" (i) "_property" } { "Property " (i + 1) } input id={ "w" (i) "_property" } name={ "w" (i) "_property" } value=(p); }
                    div.field { label for={ "w" (i) "_op" } { "Operator " (i + 1) } (ops(&format!("w{i}_op"), &format!("w{i}_op"), o)) }
                    div.field { label for={ "w" (i) "_value" } { "Value " (i + 1) } input id={ "w" (i) "_value" } name={ "w" (i) "_value" } value=(v); }
                }
            }
            p.help { "Numbers, true, false and null keep their type; quote them (\"10\") for text." }
        }
        (window_fields(d, "Counts only events newer than this."))
    }
}

fn audience_fields(d: &Draft) -> Markup {
    html! {
        p { "People who match every condition filled in below. For nested " code { "or" } "/" code { "not" } " trees or audiences of audiences, write the condition as JSON at the end." }
        fieldset.rows {
            legend { "Performed" }
            div.row {
                div.field { label for="performed" { "Track event" } input #performed name="performed" value=(d.performed); }
                div.field { label for="count_op" { "How often" } (select("count_op", "count_op", COUNT_OPS, &d.count_op)) }
                div.field { label for="count_n" { "Times" } input #count_n name="count_n" inputmode="numeric" value=(d.count_n) placeholder="1"; }
            }
        }
        div.field { label for="not_performed" { "Did not perform (track event)" } input #not_performed name="not_performed" value=(d.not_performed); }
        (window_fields(d, "Applies to the performed and not-performed events."))
        fieldset.rows {
            legend { "Trait (from identify)" }
            div.row {
                div.field { label for="trait_key" { "Trait" } input #trait_key name="trait_key" value=(d.trait_key); }
                div.field { label for="trait_op" { "Trait operator" } (ops("trait_op", "trait_op", &d.trait_op)) }
                div.field { label for="trait_value" { "Trait value" } input #trait_value name="trait_value" value=(d.trait_value); }
            }
        }
        fieldset.rows {
            legend { "Computed trait" }
            div.row {
                div.field { label for="computed_key" { "Computed trait key" } input #computed_key name="computed_key" value=(d.computed_key); }
                div.field { label for="computed_op" { "Computed trait operator" } (ops("computed_op", "computed_op", &d.computed_op)) }
                div.field { label for="computed_value" { "Computed trait value" } input #computed_value name="computed_value" value=(d.computed_value); }
            }
        }
        div.check {
            input #include_anonymous type="checkbox" name="include_anonymous" value="1" checked[d.include_anonymous];
            label for="include_anonymous" { "Include people without a userId" }
        }
        div.field {
            label for="condition_json" { "Condition as JSON (replaces the fields above)" }
            textarea #condition_json name="condition_json" rows="6" spellcheck="false" aria-describedby="condition-help" { (d.condition_json) }
            p.help #condition-help { "E.g. " code { r#"{"or": [{"audience": "buyers"}, {"not": {"performed": {"event": "Refund Requested"}}}]}"# } ". See docs/personas.md." }
        }
    }
}

fn preview_box(class: Class, p: &Value, body: &Value) -> Markup {
    let sample = p["sample"].as_array().cloned().unwrap_or_default();
    html! {
        section.card.preview #preview aria-labelledby="preview-h" {
            h2 #preview-h { "Preview" }
            @let count = p["count"].as_u64().unwrap_or(0);
            @let scanned = p["profiles_scanned"].as_u64().unwrap_or(0);
            p #preview-line { strong #preview-count { (count) } " " (class.counted_n(count)) " among " (scanned) " " (plural(scanned, "profile", "profiles")) ". Nothing is saved or sent yet." }
            @if !sample.is_empty() {
                div.table-wrap {
                    table #preview-sample {
                        caption { "A sample" }
                        thead { tr { th scope="col" { "userId" } th scope="col" { "Profile" } th scope="col" { "Value" } } }
                        tbody { @for m in &sample { tr {
                            td { (m["user_id"].as_str().unwrap_or("—")) }
                            td { code { (m["profile_id"].as_str().unwrap_or("")) } }
                            td { code { (compact(&m["value"])) } }
                        } } }
                    }
                }
            }
            details { summary { "The definition that will be saved" } pre.json { code { (pretty(&body["definition"])) } } }
        }
    }
}

fn form_page(
    s: &Session,
    class: Class,
    d: &Draft,
    destinations: &[Destination],
    error: Option<&ApiError>,
    preview: Option<(&Value, &Value)>,
) -> Markup {
    html! {
        @if let Some((p, body)) = preview { (preview_box(class, p, body)) }
        form.card method="post" action={ (class.path()) "/new" } {
            (csrf_field(s))
            @if let Some(e) = error { (api_error(e)) }
            div.field { label for="name" { "Name" } input #name name="name" value=(d.name) required maxlength="200"; }
            div.field {
                label for="key" { "Key (optional)" }
                input #key name="key" value=(d.key) aria-describedby="key-help";
                p.help #key-help { "The trait name sent to destinations: snake_case, permanent. Default: the name in snake_case." }
            }
            @if class.is_audience() { (audience_fields(d)) } @else { (trait_fields(d)) }
            fieldset {
                legend { "Send changes to" }
                @if destinations.is_empty() { p { "No destinations yet." } }
                @for dst in destinations {
                    div.check {
                        input type="checkbox" id={ "dst-" (dst.id) } name="destination_ids" value=(dst.id) checked[d.destinations.contains(&dst.id)];
                        label for={ "dst-" (dst.id) } { (dst.name) }
                    }
                }
            }
            p.actions {
                button.secondary type="submit" name="intent" value="preview" { "Preview" }
                button type="submit" name="intent" value="save" { "Save" }
            }
        }
    }
}

pub async fn form(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    class: Class,
) -> PageResult {
    let destinations = dash.app.store.list_destinations().await?;
    let d = Draft {
        kind: "counter".into(),
        window_unit: "days".into(),
        ..Draft::default()
    };
    let body = form_page(&s, class, &d, &destinations, None, None);
    Ok(page(Some(&s), &class.new_title(), class.nav(), body).into_response())
}

/// The JSON body of a handler's answer.
async fn json_of(r: Response) -> Result<(StatusCode, Value), ApiError> {
    let status = r.status();
    let bytes = axum::body::to_bytes(r.into_body(), 1 << 20)
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string()))?;
    Ok((
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    ))
}

pub async fn submit(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    class: Class,
    form: Form,
) -> PageResult {
    check_csrf(&s, &form)?;
    let d = Draft::from_form(&form);
    let preview = form.get("intent") == "preview";
    let destinations = dash.app.store.list_destinations().await?;
    let outcome = async {
        let body = d.body(class.is_audience(), preview)?;
        let shown = Value::Object(body.clone());
        let r = api::create(
            State(dash.app.clone()),
            s.actor.clone(),
            class.name(),
            JsonObject(body),
        )
        .await?;
        let (_, out) = json_of(r).await?;
        Ok::<_, ApiError>((shown, out))
    }
    .await;
    match outcome {
        Ok((shown, out)) if preview => {
            let body = form_page(
                &s,
                class,
                &d,
                &destinations,
                None,
                Some((&out["preview"], &shown)),
            );
            Ok(page(Some(&s), &class.new_title(), class.nav(), body).into_response())
        }
        Ok((_, out)) => {
            let id = out["id"].as_str().unwrap_or("");
            Ok(see_other(&format!(
                "{}/{}?created=1",
                class.path(),
                urlencode(id)
            )))
        }
        Err(e) if e.status.is_client_error() => {
            let body = form_page(&s, class, &d, &destinations, Some(&e), None);
            Ok((
                e.status,
                page(Some(&s), &class.new_title(), class.nav(), body),
            )
                .into_response())
        }
        Err(e) => Err(e.into()),
    }
}
