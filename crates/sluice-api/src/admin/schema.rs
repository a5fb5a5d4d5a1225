//! Source schema and filtering in the admin API:
//! - `GET /sources/{id}/schema`: what the source sends (sorting, paging);
//! - `GET|PUT /sources/{id}/rules`: block rules and the tracking plan;
//! - `GET|PUT /destinations/{id}/filters`: a destination's filters.
//!
//! Documents are validated with `sluice-schema` before they are stored; a
//! 400 names the offending field. A change reloads this node's routing
//! table at once; other nodes pick it up on their next refresh (< 1 s).

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use chrono::Utc;
use serde_json::{Map, Value, json};
use sluice_schema::{FilterSet, JsonType, RuleError, SourceRules};
use sluice_store::{SchemaEntry, SchemaQuery, SchemaSort};

use super::destinations::find as find_destination;
use super::extract::{JsonObject, Params};
use super::sources::find as find_source;
use crate::AppState;
use crate::audit::{After, Target, json_of, record};
use crate::error::{ApiError, ApiResult};
use crate::openapi::schemas::ErrorBody;
use crate::path_param::PathParam;
use crate::principal::Actor;

/// Query of the observed schema.
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SchemaParams {
    /// `track`, `page`, `screen`, `identify_trait`, `group_trait` or `property`.
    pub kind: Option<String>,
    /// Only entries whose name contains this.
    pub name: Option<String>,
    /// `name` (default), `first_seen`, `last_seen`, `volume_24h`, `volume_7d`, `volume_30d`.
    pub sort: Option<String>,
    /// `asc` or `desc`; volumes and `last_seen` default to `desc`.
    pub order: Option<String>,
    /// 1 to 1000, default 100.
    pub limit: Option<u32>,
    /// Entries to skip.
    pub offset: Option<u32>,
}

fn invalid(e: RuleError) -> ApiError {
    ApiError::invalid(&e.field, e.message)
}

fn entry_view(e: &SchemaEntry) -> Value {
    let mut v = json!({
        "kind": e.kind,
        "name": e.name,
        "first_seen": e.first_seen,
        "last_seen": e.last_seen,
        "volume_24h": e.volume_24h,
        "volume_7d": e.volume_7d,
        "volume_30d": e.volume_30d,
    });
    if let Some(obj) = v.as_object_mut() {
        if e.kind == "property" {
            obj.insert("property".into(), json!(e.property));
        }
        if e.kind != "track" && e.kind != "page" && e.kind != "screen" {
            let mask = u8::try_from(e.types).unwrap_or(0);
            obj.insert("types".into(), json!(JsonType::names(mask)));
        }
    }
    v
}

/// `GET /api/v1/sources/{id}/schema?kind=&name=&sort=&order=&limit=&offset=`.
#[utoipa::path(get, path = "/sources/{id}/schema", tag = "schema", params(("id" = String, Path), SchemaParams),
    responses(
        (status = 200, description = "`{data: [{kind, name, first_seen, last_seen, volume_24h, volume_7d, volume_30d, property?, types?}], total, next_offset, overflow}`", body = Object),
        (status = 400, description = "`invalid_query`", body = ErrorBody),
        (status = 404, description = "`not_found`", body = ErrorBody),
    ))]
pub async fn list(
    State(app): State<Arc<AppState>>,
    PathParam(id): PathParam<String>,
    params: Params,
) -> ApiResult<Json<Value>> {
    find_source(&app, &id).await?;
    let kind = match params.str("kind") {
        Some(k) if sluice_schema::EntryKind::parse(k).is_none() => {
            return Err(ApiError::bad_request(
                "invalid_query",
                "kind: must be one of track, page, screen, identify_trait, group_trait, property",
            ));
        }
        k => k.map(str::to_owned),
    };
    let sort = match params.str("sort") {
        None => SchemaSort::Name,
        Some(s) => SchemaSort::parse(s).ok_or_else(|| {
            let names: Vec<&str> = SchemaSort::ALL.iter().map(|(n, _)| *n).collect();
            ApiError::bad_request(
                "invalid_query",
                format!("sort: must be one of {}", names.join(", ")),
            )
        })?,
    };
    let descending = match params.str("order") {
        None => matches!(
            sort,
            SchemaSort::Volume24h
                | SchemaSort::Volume7d
                | SchemaSort::Volume30d
                | SchemaSort::LastSeen
        ),
        Some("asc") => false,
        Some("desc") => true,
        Some(_) => {
            return Err(ApiError::bad_request(
                "invalid_query",
                "order: must be asc or desc",
            ));
        }
    };
    let offset = match params.i64("offset")? {
        None => 0,
        Some(n) => u32::try_from(n)
            .map_err(|_| ApiError::bad_request("invalid_query", "offset: must be 0 or more"))?,
    };
    let query = SchemaQuery {
        kind,
        name: params.str("name").map(str::to_owned),
        sort,
        descending,
        limit: params.limit(100, 1000)?,
        offset,
        now: Utc::now(),
    };
    let page = app.store.schema_entries(&id, &query).await?;
    let data: Vec<Value> = page.entries.iter().map(entry_view).collect();
    let next_offset = (u64::from(offset) + (data.len() as u64) < page.total)
        .then(|| u64::from(offset) + data.len() as u64);
    Ok(Json(json!({
        "data": data,
        "total": page.total,
        "next_offset": next_offset,
        "overflow": page.overflow,
    })))
}

/// `GET /api/v1/sources/{id}/rules`.
#[utoipa::path(get, path = "/sources/{id}/rules", tag = "schema", params(("id" = String, Path)),
    responses(
        (status = 200, description = "`{blocked_events, blocked_identify_traits, blocked_group_traits, tracking_plan: {enabled, events}}` (docs/schema.md)", body = Object),
        (status = 404, description = "`not_found`", body = ErrorBody),
    ))]
pub async fn get_rules(
    State(app): State<Arc<AppState>>,
    PathParam(id): PathParam<String>,
) -> ApiResult<Json<Value>> {
    find_source(&app, &id).await?;
    let stored = app.store.list_source_rules().await?;
    let doc = stored
        .into_iter()
        .find(|(s, _)| *s == id)
        .and_then(|(_, text)| serde_json::from_str(&text).ok())
        .unwrap_or_else(|| Value::Object(Map::new()));
    let rules = SourceRules::parse(&doc).unwrap_or_default();
    Ok(Json(rules.to_value()))
}

/// `PUT /api/v1/sources/{id}/rules`: replaces the rules.
#[utoipa::path(put, path = "/sources/{id}/rules", tag = "schema", params(("id" = String, Path)),
    request_body(content = Object, description = "`blocked_events`, `blocked_identify_traits`, `blocked_group_traits`, `tracking_plan` {`enabled`, `events`} (docs/schema.md)"),
    responses(
        (status = 200, description = "The rules as stored", body = Object),
        (status = 400, description = "`invalid_json`, `invalid_field` naming the field", body = ErrorBody),
        (status = 404, description = "`not_found`", body = ErrorBody),
    ))]
pub async fn put_rules(
    State(app): State<Arc<AppState>>,
    actor: Actor,
    PathParam(id): PathParam<String>,
    JsonObject(body): JsonObject,
) -> ApiResult<Json<Value>> {
    find_source(&app, &id).await?;
    let rules = SourceRules::parse(&Value::Object(body)).map_err(invalid)?;
    let doc = rules.to_value();
    let Json(before) = get_rules(State(app.clone()), PathParam(id.clone())).await?;
    let target = Target::new("source_rules", "replace", Some(&id));
    let change = async {
        app.store.put_source_rules(&id, &doc.to_string()).await?;
        app.config_changed().await?;
        Ok(Json(doc))
    };
    record(&app, &actor, target, json_of(&before), change, |Json(d)| {
        After::state(json_of(d))
    })
    .await
}

/// `GET /api/v1/destinations/{id}/filters`.
#[utoipa::path(get, path = "/destinations/{id}/filters", tag = "schema", params(("id" = String, Path)),
    responses(
        (status = 200, description = "`{filters: [{name, action, when?, fields?}]}`; `{filters: []}` when none", body = Object),
        (status = 404, description = "`not_found`", body = ErrorBody),
    ))]
pub async fn get_filters(
    State(app): State<Arc<AppState>>,
    PathParam(id): PathParam<String>,
) -> ApiResult<Json<Value>> {
    find_destination(&app, &id).await?;
    let doc = stored_filters(&app, &id)
        .await?
        .unwrap_or_else(|| json!({"filters": []}));
    Ok(Json(doc))
}

/// The filter document stored for destination `id`, if any.
async fn stored_filters(app: &AppState, id: &str) -> ApiResult<Option<Value>> {
    let stored = app.store.list_destination_filters().await?;
    Ok(stored
        .into_iter()
        .find(|(d, _)| d == id)
        .and_then(|(_, text)| serde_json::from_str(&text).ok()))
}

/// `PUT /api/v1/destinations/{id}/filters`: replaces the filters. An
/// unknown destination is a 400 naming the path's `id` rather than a 404,
/// since the filter document itself is what refers to it.
#[utoipa::path(put, path = "/destinations/{id}/filters", tag = "schema", params(("id" = String, Path)),
    request_body(content = Object, description = "`{filters: [{name, action: drop | drop_fields, when?, fields?}]}` (docs/schema.md)"),
    responses(
        (status = 200, description = "The filters as stored", body = Object),
        (status = 400, description = "`invalid_json`, `invalid_field` (also for an unknown destination: `destination_id`)", body = ErrorBody),
    ))]
pub async fn put_filters(
    State(app): State<Arc<AppState>>,
    actor: Actor,
    PathParam(id): PathParam<String>,
    JsonObject(body): JsonObject,
) -> ApiResult<Json<Value>> {
    if app.store.get_destination(&id).await?.is_none() {
        return Err(ApiError::invalid(
            "destination_id",
            format!("no destination '{id}'"),
        ));
    }
    let doc = Value::Object(body);
    let previous = stored_filters(&app, &id).await?;
    FilterSet::parse_new(&doc, previous.as_ref()).map_err(invalid)?;
    let before = previous.unwrap_or_else(|| json!({"filters": []}));
    let target = Target::new("destination_filters", "replace", Some(&id));
    let change = async {
        app.store
            .put_destination_filters(&id, &doc.to_string())
            .await?;
        app.config_changed().await?;
        Ok(Json(doc))
    };
    record(&app, &actor, target, json_of(&before), change, |Json(d)| {
        After::state(json_of(d))
    })
    .await
}
