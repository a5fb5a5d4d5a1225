//! Handlers shared by computed traits and audiences (`class`).

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use sluice_profiles::preview::preview;
use sluice_profiles::{AUDIENCE, Definition};
use sluice_store::{Computation, ComputationPage, ComputationPatch, NewComputation, keys};

use super::validate;
use crate::AppState;
use crate::admin::extract::{JsonObject, Params, known_fields, opt_field};
use crate::audit::{After, Target, json_of, record};
use crate::error::{ApiError, ApiResult};
use crate::path_param::PathParam;
use crate::principal::Actor;

fn what(class: &str) -> &'static str {
    if class == AUDIENCE {
        "audience"
    } else {
        "computed trait"
    }
}

async fn view(app: &AppState, c: &Computation) -> ApiResult<Value> {
    let with_value = app.store.count_values(&c.id).await?;
    let definition: Value = serde_json::from_str(&c.definition).unwrap_or(Value::Null);
    let count_name = if c.class == AUDIENCE {
        "size"
    } else {
        "people_with_value"
    };
    let mut status = json!({
        "last_computed_at": c.last_computed_at,
        "messages_sent": c.messages_sent,
    });
    status[count_name] = json!(with_value);
    let per_destination: serde_json::Map<String, Value> = app
        .store
        .sends_by_destination(&c.id)
        .await?
        .into_iter()
        .map(|(d, n)| (d, json!(n)))
        .collect();
    status["messages_sent_by_destination"] = Value::Object(per_destination);
    Ok(json!({
        "id": c.id, "class": c.class, "name": c.name, "key": c.key,
        "definition": definition, "destination_ids": c.destination_ids,
        "revision": c.revision, "created_at": c.created_at, "updated_at": c.updated_at,
        "status": status,
    }))
}

/// The audit log's name for a computation of `class`.
fn resource(class: &str) -> &'static str {
    if class == AUDIENCE {
        "audience"
    } else {
        "computed_trait"
    }
}

/// A computation as the audit log keeps it: its definition, without the
/// counts that change by themselves.
fn audited(c: &Computation) -> Option<String> {
    let definition: Value = serde_json::from_str(&c.definition).unwrap_or(Value::Null);
    json_of(&json!({
        "id": c.id, "class": c.class, "name": c.name, "key": c.key,
        "definition": definition, "destination_ids": c.destination_ids,
        "revision": c.revision,
    }))
}

/// Changes a computation, recorded in the audit log.
async fn change(
    app: &AppState,
    actor: &Actor,
    class: &str,
    action: &'static str,
    current: &Computation,
    patch: ComputationPatch,
) -> ApiResult<Computation> {
    let target = Target::new(resource(class), action, Some(&current.id));
    let update = async {
        app.store
            .update_computation(&current.id, patch)
            .await?
            .ok_or_else(|| ApiError::not_found(what(class)))
    };
    record(app, actor, target, audited(current), update, |c| {
        After::state(audited(c))
    })
    .await
}

/// The fields a create accepts (`preview` asks for a dry run).
const CREATE_FIELDS: &[&str] = &["name", "key", "definition", "destination_ids", "preview"];
/// The fields an update accepts (`key` only to be told it is permanent).
const UPDATE_FIELDS: &[&str] = &["name", "key", "definition", "destination_ids"];

async fn live(app: &AppState, class: &str, id: &str) -> ApiResult<Computation> {
    app.store
        .get_computation(id)
        .await?
        .filter(|c| c.class == class && c.deleted_at.is_none())
        .ok_or_else(|| ApiError::not_found(what(class)))
}

pub async fn create(
    State(app): State<Arc<AppState>>,
    actor: Actor,
    class: &'static str,
    JsonObject(body): JsonObject,
) -> ApiResult<Response> {
    known_fields(&body, CREATE_FIELDS)?;
    let name = validate::name(&body)?;
    let key = validate::key(&body, &name)?;
    let destination_ids = validate::destinations(app.store.as_ref(), &body).await?;
    let def = validate::definition(app.store.as_ref(), class, &key, &body, None).await?;
    if opt_field(&body, "preview", Value::as_bool, "a boolean")?.unwrap_or(false) {
        let p = preview(app.store.as_ref(), &key, &def).await.map_err(|e| {
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                e.to_string(),
            )
        })?;
        let sample: Vec<Value> = p
            .sample
            .into_iter()
            .map(|(id, user_id, value)| json!({"profile_id": id, "user_id": user_id, "value": value}))
            .collect();
        return Ok(Json(json!({"preview": {
            "count": p.count, "profiles_scanned": p.scanned, "sample": sample,
        }}))
        .into_response());
    }
    let id = keys::new_id(if class == AUDIENCE { "aud" } else { "ctr" });
    let target = Target::new(resource(class), "create", Some(&id));
    let create = app.store.create_computation(NewComputation {
        id,
        class: class.to_owned(),
        key,
        name,
        definition: def.to_json().to_string(),
        destination_ids: destination_ids.unwrap_or_default(),
    });
    let create = async { Ok(create.await?) };
    let created = record(&app, &actor, target, None, create, |c| {
        After::state(audited(c))
    })
    .await?;
    Ok((StatusCode::CREATED, Json(view(&app, &created).await?)).into_response())
}

/// Items per page of a definitions list unless `limit` says otherwise.
pub const LIST_DEFAULT: u32 = 100;
/// The largest `limit` of a definitions list.
pub const LIST_MAX: u32 = 1000;

/// A page of one class's definitions, oldest first: `after` is the cursor
/// (the last `id` of the previous page), `next_after` the next one (`null`
/// after the last page), `total` the number of live definitions.
pub async fn list(
    State(app): State<Arc<AppState>>,
    class: &'static str,
    params: Params,
) -> ApiResult<Json<Value>> {
    let limit = params.limit(LIST_DEFAULT, LIST_MAX)?;
    let page = ComputationPage {
        class: class.to_owned(),
        after: params.str("after").map(str::to_owned),
        limit,
    };
    let (rows, total) = tokio::try_join!(
        app.store.computations_page(page),
        app.store.count_computations(class)
    )?;
    let mut data = Vec::with_capacity(rows.len());
    for c in &rows {
        data.push(view(&app, c).await?);
    }
    let next = (rows.len() == limit as usize)
        .then(|| rows.last().map(|c| c.id.clone()))
        .flatten();
    Ok(Json(
        json!({ "data": data, "next_after": next, "total": total }),
    ))
}

pub async fn get(
    State(app): State<Arc<AppState>>,
    class: &'static str,
    PathParam(id): PathParam<String>,
) -> ApiResult<Json<Value>> {
    let c = live(&app, class, &id).await?;
    Ok(Json(view(&app, &c).await?))
}

pub async fn update(
    State(app): State<Arc<AppState>>,
    actor: Actor,
    class: &'static str,
    PathParam(id): PathParam<String>,
    JsonObject(body): JsonObject,
) -> ApiResult<Json<Value>> {
    let current = live(&app, class, &id).await?;
    known_fields(&body, UPDATE_FIELDS)?;
    let mut patch = ComputationPatch::default();
    if body.contains_key("name") {
        patch.name = Some(validate::name(&body)?);
    }
    if body.contains_key("key") {
        return Err(ApiError::invalid(
            "key",
            "cannot change: keys are permanent",
        ));
    }
    if body.contains_key("definition") {
        let def: Definition =
            validate::definition(app.store.as_ref(), class, &current.key, &body, Some(&id)).await?;
        patch.definition = Some(def.to_json().to_string());
    }
    patch.destination_ids = validate::destinations(app.store.as_ref(), &body).await?;
    let updated = change(&app, &actor, class, "update", &current, patch).await?;
    Ok(Json(view(&app, &updated).await?))
}

/// Deleting sends nothing: receivers keep the last value sent (as Segment
/// does); see `docs/personas.md`.
pub async fn delete(
    State(app): State<Arc<AppState>>,
    actor: Actor,
    class: &'static str,
    PathParam(id): PathParam<String>,
) -> ApiResult<StatusCode> {
    let current = live(&app, class, &id).await?;
    let target = Target::new(resource(class), "delete", Some(&id));
    let delete = async {
        app.store.delete_computation(&id).await?;
        Ok(StatusCode::NO_CONTENT)
    };
    record(
        &app,
        &actor,
        target,
        audited(&current),
        delete,
        After::nothing,
    )
    .await
}

pub async fn connect(
    State(app): State<Arc<AppState>>,
    actor: Actor,
    class: &'static str,
    PathParam((id, destination_id)): PathParam<(String, String)>,
    on: bool,
) -> ApiResult<Json<Value>> {
    let current = live(&app, class, &id).await?;
    if app.store.get_destination(&destination_id).await?.is_none() {
        return Err(ApiError::not_found("destination"));
    }
    let mut ids: Vec<String> = current
        .destination_ids
        .iter()
        .filter(|d| **d != destination_id)
        .cloned()
        .collect();
    if on {
        ids.push(destination_id);
    }
    let patch = ComputationPatch {
        destination_ids: Some(ids),
        ..ComputationPatch::default()
    };
    let action = if on { "connect" } else { "disconnect" };
    let updated = change(&app, &actor, class, action, &current, patch).await?;
    Ok(Json(view(&app, &updated).await?))
}

/// People with a value (audiences: members), by profile id; `after` is the
/// cursor (the last `profile_id` of the previous page).
pub async fn members(
    State(app): State<Arc<AppState>>,
    class: &'static str,
    PathParam(id): PathParam<String>,
    params: Params,
) -> ApiResult<Json<Value>> {
    live(&app, class, &id).await?;
    let limit = params.limit(100, 1000)?;
    let after = params.str("after").unwrap_or("").to_owned();
    let values = app.store.list_values(&id, &after, limit).await?;
    let profiles = app
        .store
        .load_profiles(values.iter().map(|v| v.profile_id.clone()).collect(), false)
        .await?;
    let mut data = Vec::new();
    for v in &values {
        let doc = profiles.iter().find(|p| p.id == v.profile_id);
        let parsed: Value = doc
            .and_then(|d| serde_json::from_str(&d.doc).ok())
            .unwrap_or(Value::Null);
        data.push(json!({
            "profile_id": v.profile_id,
            "user_id": parsed["user_ids"].as_array().and_then(|a| a.last()).cloned(),
            // Anonymous members (`include_anonymous`) are told apart by it.
            "anonymous_id": parsed["anonymous_ids"].as_array().and_then(|a| a.last()).cloned(),
            "value": serde_json::from_str::<Value>(&v.value).unwrap_or(Value::Null),
        }));
    }
    let next = (values.len() == limit as usize)
        .then(|| values.last().map(|v| v.profile_id.clone()))
        .flatten();
    Ok(Json(json!({"data": data, "next_after": next})))
}
