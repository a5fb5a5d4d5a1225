//! `/destinations/{id}/edit`: the destination form filled with the current
//! settings. The secret is never shown: leaving its field empty keeps it,
//! a checkbox removes it. Saved through the admin API's update handler;
//! the on/off state is left as it is.

use sluice_api::path_param::PathParam;
use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use serde_json::{Map, Value, json};
use sluice_api::ApiError;
use sluice_api::admin::destinations as api;
use sluice_api::admin::extract::JsonObject;
use sluice_outbound::Masker;
use sluice_outbound::mask::mask_url;
use sluice_store::{Destination, Source};

use super::destination_extras::{self as extras, Extras};
use super::destination_form::{
    DESTINATION_FORM_BYTES, Entered, Mode, cut_short, field_of, render, validate,
};
use crate::Dash;
use crate::form::FormUpTo;
use crate::layout::{PagePath, PageResult, SignedIn, check_csrf_token, page, see_other};
use crate::session::Session;

async fn find(dash: &Dash, id: &str) -> PageResult<Destination> {
    Ok(dash
        .app
        .store
        .get_destination(id)
        .await?
        .ok_or_else(|| ApiError::not_found("destination"))?)
}

fn masked_urls(d: &Destination, masker: &Masker) -> Vec<(String, String)> {
    d.settings
        .urls
        .iter()
        .map(|u| {
            let headers: Vec<String> = u
                .headers
                .iter()
                .map(|(k, v)| format!("{k}: {}", masker.header_value(k, v)))
                .collect();
            (mask_url(&u.url), headers.join("\n"))
        })
        .collect()
}

fn secret_hint(d: &Destination, masker: &Masker) -> Option<String> {
    api::view(d, masker).settings.shared_secret
}

/// The opt-ins as stored: the Standard Webhooks secret only as the admin
/// API shows it, the CA bundle in full (certificates are public).
fn current_extras(d: &Destination, masker: &Masker) -> Extras {
    let view = api::view(d, masker).settings;
    Extras {
        standard: view.standard_webhooks.is_some(),
        standard_hint: view
            .standard_webhooks
            .map(|sw| match sw.previous_secret_valid_until {
                Some(until) => format!(
                    "{} (the previous secret also signs until {until})",
                    sw.secret
                ),
                None => sw.secret,
            }),
        ca_bundle: d.settings.ca_bundle.clone().unwrap_or_default(),
        ..Extras::default()
    }
}

fn respond(
    s: &Session,
    d: &Destination,
    sources: &[Source],
    e: &Entered,
    status: StatusCode,
) -> PageResult {
    let action = format!("/destinations/{}/edit", d.id);
    let mode = Mode {
        action: &action,
        submit: "Save changes",
        editing: true,
    };
    let body = render(s, sources, e, &mode);
    let title = format!("Edit {}", d.name);
    Ok((status, page(Some(s), &title, "destinations", body)).into_response())
}

pub async fn form(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    PagePath(id): PagePath<String>,
) -> PageResult {
    let d = find(&dash, &id).await?;
    let sources = dash.app.store.list_sources().await?;
    let entered = Entered {
        kind: d.kind.clone(),
        name: d.name.clone(),
        sources: d.source_ids.clone(),
        // Credentials are shown masked; the admin API keeps the stored
        // value when a masked one comes back unchanged.
        urls: masked_urls(&d, &dash.app.outbound.masker),
        secret_hint: secret_hint(&d, &dash.app.outbound.masker),
        extras: current_extras(&d, &dash.app.outbound.masker),
        ..Entered::default()
    };
    respond(&s, &d, &sources, &entered, StatusCode::OK)
}

pub async fn submit(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    PagePath(id): PagePath<String>,
    FormUpTo(form): FormUpTo<DESTINATION_FORM_BYTES>,
) -> PageResult {
    check_csrf_token(&s, &form)?;
    let d = find(&dash, &id).await?;
    let (mut e, urls, secret) = match cut_short(&form, true, &dash.app.outbound) {
        Some(cut) => (cut, Vec::new(), None),
        None => validate(&form, true, &dash.app.outbound),
    };
    e.secret_hint = secret_hint(&d, &dash.app.outbound.masker);
    e.extras.standard_hint = current_extras(&d, &dash.app.outbound.masker).standard_hint;
    let signing_now = d.settings.standard_webhooks.is_some();
    if e.errors.is_empty() {
        let mut settings = Map::new();
        settings.insert("urls".into(), Value::Array(urls));
        if let Some(secret) = secret {
            settings.insert("sharedSecret".into(), secret);
        }
        extras::apply(&e.extras, signing_now, &mut settings);
        let mut body = Map::new();
        body.insert("name".into(), json!(e.name));
        body.insert("source_ids".into(), json!(e.sources));
        body.insert("settings".into(), Value::Object(settings));
        match api::update(
            State(dash.app.clone()),
            s.actor.clone(),
            PathParam(id.clone()),
            JsonObject(body),
        )
        .await
        {
            Ok(updated) => {
                let next = format!("/destinations/{id}?updated=1");
                if extras::generates(&e.extras, signing_now) {
                    return Ok(extras::secret_once(&s, &updated.0, &next));
                }
                return Ok(see_other(&next));
            }
            Err(err) if err.status == StatusCode::BAD_REQUEST => {
                e.errors.insert(field_of(&err.message), err.message);
            }
            Err(err) => return Err(err.into()),
        }
    }
    let sources = dash.app.store.list_sources().await?;
    respond(&s, &d, &sources, &e, StatusCode::BAD_REQUEST)
}
