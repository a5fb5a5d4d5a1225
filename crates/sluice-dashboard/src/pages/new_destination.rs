//! `/destinations/new`: the whole setup (sources, URLs, secret) on one form (see
//! [`super::destination_form`]). Saved switched off; the destination's page
//! has the switch.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use serde_json::{Map, Value, json};
use sluice_api::admin::destinations as api;
use sluice_api::admin::extract::JsonObject;
use sluice_api::routes::WEBHOOKS;

use super::destination_extras as extras;
use super::destination_form::{
    DESTINATION_FORM_BYTES, Entered, Mode, cut_short, field_of, render, validate,
};
use crate::Dash;
use crate::form::FormUpTo;
use crate::layout::{PageResult, SignedIn, check_csrf_token, page, see_other};

const MODE: Mode = Mode {
    action: "/destinations/new",
    submit: "Save destination",
    editing: false,
};

pub async fn form(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    Query(q): Query<HashMap<String, String>>,
) -> PageResult {
    let kind = q.get("type").cloned().unwrap_or_else(|| WEBHOOKS.into());
    if kind != WEBHOOKS {
        return Err(sluice_api::ApiError::invalid(
            "type",
            format!("unknown destination type '{kind}'; see /api/v1/catalog/destinations"),
        )
        .into());
    }
    let sources = dash.app.store.list_sources().await?;
    let entered = Entered {
        name: kind.clone(),
        kind,
        // One source is the common case: preselect it.
        sources: match sources.as_slice() {
            [only] => vec![only.id.clone()],
            _ => Vec::new(),
        },
        ..Entered::default()
    };
    let body = render(&s, &sources, &entered, &MODE);
    Ok(page(Some(&s), "New Webhooks destination", "destinations", body).into_response())
}

pub async fn submit(
    State(dash): State<Arc<Dash>>,
    SignedIn(s): SignedIn,
    FormUpTo(form): FormUpTo<DESTINATION_FORM_BYTES>,
) -> PageResult {
    check_csrf_token(&s, &form)?;
    let (mut e, urls, secret) = match cut_short(&form, false, &dash.app.outbound) {
        Some(cut) => (cut, Vec::new(), None),
        None => validate(&form, false, &dash.app.outbound),
    };
    if e.errors.is_empty() {
        let mut settings = Map::new();
        settings.insert("urls".into(), Value::Array(urls));
        settings.insert("sharedSecret".into(), secret.unwrap_or(Value::Null));
        extras::apply(&e.extras, false, &mut settings);
        let body = json!({
            "name": e.name,
            "type": e.kind,
            "enabled": false,
            "source_ids": e.sources,
            "settings": settings,
        });
        let Value::Object(body) = body else {
            unreachable!("json! of an object literal is an object")
        };
        match api::create(State(dash.app.clone()), s.actor.clone(), JsonObject(body)).await {
            Ok((_, created)) => {
                let next = format!("/destinations/{}?created=1", created.0.id);
                if extras::generates(&e.extras, false) {
                    return Ok(extras::secret_once(&s, &created.0, &next));
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
    let body = render(&s, &sources, &e, &MODE);
    Ok((
        StatusCode::BAD_REQUEST,
        page(Some(&s), "New Webhooks destination", "destinations", body),
    )
        .into_response())
}
