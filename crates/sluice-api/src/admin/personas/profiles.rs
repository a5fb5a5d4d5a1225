//! `GET /profiles/{id}`: a person by userId or anonymousId (or profile id).

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use serde_json::{Map, Value, json};
use sluice_profiles::profile::{Profile, ProfileEvent};

use crate::AppState;
use crate::admin::extract::Params;
use crate::error::{ApiError, ApiResult};
use crate::path_param::PathParam;

#[utoipa::path(get, path = "/profiles/{id}", tag = "personas",
    params(
        ("id" = String, Path, description = "A userId, anonymousId or profile id"),
        crate::openapi::schemas::PageQuery,
    ),
    responses(
        (status = 200, description = "The profile: identities, traits, computed values, audiences, events (docs/personas.md)", body = Object),
        (status = 404, description = "`not_found`", body = crate::openapi::schemas::ErrorBody),
    ))]
pub async fn get(
    State(app): State<Arc<AppState>>,
    PathParam(id): PathParam<String>,
    params: Params,
) -> ApiResult<Json<Value>> {
    let found = app
        .store
        .resolve_identities(vec![format!("user:{id}"), format!("anon:{id}")])
        .await?;
    let profile_id = found
        .iter()
        .find(|(k, _)| k.starts_with("user:"))
        .or(found.first())
        .map_or(id.clone(), |(_, p)| p.clone());
    let record = app
        .store
        .load_profiles(vec![profile_id.clone()], true)
        .await?
        .into_iter()
        .next()
        .ok_or_else(|| ApiError::not_found("profile"))?;
    let profile: Profile = serde_json::from_str(&record.doc).unwrap_or_default();
    // Every stored row, not only the newest the engine evaluates.
    let stored: Vec<ProfileEvent> = record.events.iter().map(ProfileEvent::from_row).collect();
    let values = app.store.values_of(vec![profile_id.clone()]).await?;
    // Only the definitions the person has values of, by id.
    let ids = values.iter().map(|v| v.computation_id.clone()).collect();
    let computations: std::collections::HashMap<String, sluice_store::Computation> = app
        .store
        .computations_by_id(ids)
        .await?
        .into_iter()
        .filter(|c| c.deleted_at.is_none())
        .map(|c| (c.id.clone(), c))
        .collect();
    let mut traits = Map::new();
    let mut audiences = Vec::new();
    for v in values {
        let Some(c) = computations.get(&v.computation_id) else {
            continue;
        };
        let value: Value = serde_json::from_str(&v.value).unwrap_or(Value::Null);
        if c.class == sluice_profiles::AUDIENCE {
            audiences.push(json!({"id": c.id, "key": c.key, "name": c.name}));
        } else {
            traits.insert(c.key.clone(), value);
        }
    }
    // Newest events first, paginated by `before` (an event seq).
    let limit = params.limit(50, 500)? as usize;
    let before = params.i64("before")?.unwrap_or(i64::MAX);
    let events: Vec<Value> = stored
        .iter()
        .rev()
        .filter(|e| e.seq < before)
        .take(limit)
        .map(|e| {
            json!({"seq": e.seq, "type": e.kind, "name": e.name, "source_id": e.source_id,
                   "timestamp": chrono::DateTime::from_timestamp_millis(e.ts), "properties": e.properties})
        })
        .collect();
    Ok(Json(json!({
        "id": profile_id,
        "user_ids": profile.user_ids,
        "anonymous_ids": profile.anonymous_ids,
        "traits": profile.traits,
        "computed_traits": traits,
        "audiences": audiences,
        "events": events,
    })))
}
