//! User deletion and suppression (`/regulations`, `/suppressions`), modelled
//! on Segment's Regulations API; see `docs/privacy.md`. The request only
//! records the regulation (and applies its suppression change); the purge
//! and the delete notifications run as a durable job in `sluice-server`.

use std::collections::HashSet;
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use chrono::Utc;
use serde_json::{Map, Value, json};
use sluice_store::{NewRegulation, Regulation, RegulationDetail, SuppressedCount, UsageDay, keys};

use crate::AppState;
use crate::admin::extract::{Params, known_fields};
use crate::error::{ApiError, ApiResult};
use crate::openapi::schemas::ErrorBody;
use crate::path_param::PathParam;

/// The most subject ids one regulation takes (as Segment).
pub const MAX_SUBJECTS: usize = 5000;

/// A regulation body may carry 5,000 ids of up to 1,024 bytes each, more
/// than the admin API's usual cap.
pub const MAX_REGULATION_BODY: usize = 6 * 1024 * 1024;

/// A JSON object body read under [`MAX_REGULATION_BODY`].
pub struct RegulationBody(pub Map<String, Value>);

impl<S: Send + Sync> axum::extract::FromRequest<S> for RegulationBody {
    type Rejection = ApiError;

    async fn from_request(req: axum::extract::Request, _state: &S) -> Result<Self, ApiError> {
        let bytes = axum::body::to_bytes(req.into_body(), MAX_REGULATION_BODY)
            .await
            .map_err(|_| {
                ApiError::too_large(format!("body exceeds {MAX_REGULATION_BODY} bytes"))
            })?;
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(map)) => Ok(RegulationBody(map)),
            Ok(_) => Err(ApiError::bad_request(
                "invalid_json",
                "body must be a JSON object",
            )),
            Err(e) => Err(ApiError::bad_request(
                "invalid_json",
                format!("invalid JSON: {e}"),
            )),
        }
    }
}

/// What a regulation type does: (suppress change, purge, notify).
pub fn regulation_kind(name: &str) -> Option<(Option<bool>, bool, bool)> {
    Some(match name {
        "DELETE_ONLY" => (None, true, true),
        "SUPPRESS_WITH_DELETE" => (Some(true), true, true),
        "SUPPRESS_ONLY" => (Some(true), false, false),
        "UNSUPPRESS" => (Some(false), false, false),
        "DELETE_INTERNAL" => (None, true, false),
        "SUPPRESS_WITH_DELETE_INTERNAL" => (Some(true), true, false),
        _ => return None,
    })
}

/// Whether a regulation type suppresses its subjects and purges their data
/// (`SUPPRESS_WITH_DELETE`, `SUPPRESS_WITH_DELETE_INTERNAL`): its purge waits
/// until the suppression holds on every node (`docs/privacy.md`).
pub fn suppresses_and_purges(name: &str) -> bool {
    matches!(regulation_kind(name), Some((Some(true), true, _)))
}

/// Checks a request body; every error names its field.
fn parse(body: &Map<String, Value>) -> Result<(String, Vec<String>, Option<String>), ApiError> {
    // A misspelt `source_id` must not widen a deletion to every source.
    known_fields(body, FIELDS)?;
    let kind = match body.get("regulationType") {
        Some(Value::String(s)) if regulation_kind(s).is_some() => s.clone(),
        Some(Value::String(s)) => {
            return Err(ApiError::invalid(
                "regulationType",
                format!(
                    "unknown type '{s}' (DELETE_ONLY, SUPPRESS_WITH_DELETE, SUPPRESS_ONLY, \
                     UNSUPPRESS, DELETE_INTERNAL, SUPPRESS_WITH_DELETE_INTERNAL)"
                ),
            ));
        }
        _ => return Err(ApiError::invalid("regulationType", "is required")),
    };
    match body.get("subjectType") {
        None => {}
        Some(Value::String(s)) if s == "USER_ID" => {}
        Some(_) => return Err(ApiError::invalid("subjectType", "must be \"USER_ID\"")),
    }
    let Some(Value::Array(items)) = body.get("subjectIds") else {
        return Err(ApiError::invalid(
            "subjectIds",
            "must be a list of user ids",
        ));
    };
    if items.is_empty() {
        return Err(ApiError::invalid("subjectIds", "must not be empty"));
    }
    if items.len() > MAX_SUBJECTS {
        return Err(ApiError::invalid(
            "subjectIds",
            format!("at most {MAX_SUBJECTS} ids per regulation"),
        ));
    }
    let mut seen = HashSet::new();
    let mut ids = Vec::with_capacity(items.len());
    for item in items {
        match item {
            Value::String(s) if !s.is_empty() && s.len() <= 1024 => {
                if seen.insert(s.as_str()) {
                    ids.push(s.clone());
                }
            }
            _ => {
                return Err(ApiError::invalid(
                    "subjectIds",
                    "each id must be a non-empty string of at most 1024 bytes",
                ));
            }
        }
    }
    // Two spellings of one field: both present is ambiguous (a `null` in one
    // would otherwise widen the regulation to every source), so refused.
    if body.contains_key("source_id") && body.contains_key("sourceId") {
        return Err(ApiError::invalid(
            "source_id",
            "give one of 'source_id' and 'sourceId', not both",
        ));
    }
    let source = match body.get("source_id").or_else(|| body.get("sourceId")) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(ApiError::invalid("source_id", "must be a string")),
    };
    Ok((kind, ids, source))
}

/// The fields of `POST /regulations` (`sourceId` spells `source_id` too).
pub const FIELDS: &[&str] = &[
    "regulationType",
    "subjectType",
    "subjectIds",
    "source_id",
    "sourceId",
];

/// The body of `POST /regulations` (Segment's Regulations API); other
/// fields are refused.
#[derive(Debug, serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[allow(non_snake_case)]
pub struct RegulationInput {
    /// `DELETE_ONLY`, `SUPPRESS_WITH_DELETE`, `SUPPRESS_ONLY`, `UNSUPPRESS`,
    /// `DELETE_INTERNAL` or `SUPPRESS_WITH_DELETE_INTERNAL`.
    pub regulationType: String,
    /// `USER_ID` (the only kind).
    pub subjectType: Option<String>,
    /// 1 to 5000 non-empty strings; duplicates count once.
    pub subjectIds: Vec<String>,
    /// Limit the regulation to one source.
    pub source_id: Option<String>,
    /// `source_id` in Segment's spelling; giving both is refused.
    pub sourceId: Option<String>,
}

/// `POST /regulations`: records the regulation and answers at once.
#[utoipa::path(post, path = "/regulations", tag = "privacy", request_body = RegulationInput,
    responses(
        (status = 201, description = "`{id, regulateId, regulationType, subjectType, source_id, status, subjects, subjectsDone, createdAt, finishedAt}` (docs/privacy.md)", body = Object),
        (status = 400, description = "`invalid_json`, `body_too_large`, `invalid_field`", body = ErrorBody),
    ))]
pub async fn create(
    State(app): State<Arc<AppState>>,
    RegulationBody(body): RegulationBody,
) -> ApiResult<(StatusCode, Json<Value>)> {
    let (kind, subject_ids, source_id) = parse(&body)?;
    if let Some(id) = &source_id
        && app.store.get_source(id).await?.is_none()
    {
        return Err(ApiError::invalid(
            "source_id",
            format!("unknown source '{id}'"),
        ));
    }
    let (suppress, purge, notify) = regulation_kind(&kind).unwrap_or((None, false, false));
    let regulation = app
        .store
        .create_regulation(NewRegulation {
            id: keys::new_id("reg"),
            regulation_type: kind,
            subject_ids,
            source_id,
            suppress,
            purge,
            notify,
            now: Utc::now(),
        })
        .await?;
    if suppress.is_some()
        && let Err(e) = app.suppressions.refresh(app.store.as_ref()).await
    {
        // The timer catches up; the change is committed either way.
        tracing::warn!(error = %e, "refreshing suppressions after a regulation");
    }
    let mut out = summary(&regulation);
    out["regulateId"] = json!(regulation.id);
    Ok((StatusCode::CREATED, Json(out)))
}

/// Newest first.
#[utoipa::path(get, path = "/regulations", tag = "privacy",
    params(("limit" = Option<u32>, Query, description = "1 to 1000, default 100")),
    responses(
        (status = 200, description = "`{data: [regulation]}`", body = Object),
        (status = 400, description = "`invalid_query`", body = ErrorBody),
    ))]
pub async fn list(State(app): State<Arc<AppState>>, params: Params) -> ApiResult<Json<Value>> {
    let limit = params.limit(100, 1000)?;
    let data: Vec<Value> = app
        .store
        .list_regulations(limit)
        .await?
        .iter()
        .map(summary)
        .collect();
    Ok(Json(json!({ "data": data })))
}

/// One regulation with its subjects and notifications.
#[utoipa::path(get, path = "/regulations/{id}", tag = "privacy", params(("id" = String, Path)),
    responses(
        (status = 200, description = "The regulation with `subjectDetails` and `notifications`", body = Object),
        (status = 404, description = "`not_found`", body = ErrorBody),
    ))]
pub async fn get(
    State(app): State<Arc<AppState>>,
    PathParam(id): PathParam<String>,
) -> ApiResult<Json<Value>> {
    let detail = app
        .store
        .get_regulation(&id)
        .await?
        .ok_or_else(|| ApiError::not_found("regulation"))?;
    Ok(Json(view(&detail)))
}

/// `GET /suppressions?after=&limit=`: suppressed user ids in id order, and
/// the size of the answering node's in-memory set (`thisNode`).
#[utoipa::path(get, path = "/suppressions", tag = "privacy",
    params(
        ("after" = Option<String>, Query, description = "The previous page's `next`"),
        ("limit" = Option<u32>, Query, description = "1 to 10000, default 1000"),
    ),
    responses(
        (status = 200, description = "`{data: [user id], next, thisNode: {ids, memoryBytes}}`; `next` is `null` at the end", body = Object),
        (status = 400, description = "`invalid_query`", body = ErrorBody),
    ))]
pub async fn suppressions(
    State(app): State<Arc<AppState>>,
    params: Params,
) -> ApiResult<Json<Value>> {
    let limit = params.limit(1000, 10_000)?;
    let after = params.str("after").unwrap_or("");
    let ids = app.store.list_suppressions(after, limit).await?;
    let next = (ids.len() == limit as usize).then(|| ids.last().cloned());
    // What the answering node holds in memory for ingest's check.
    let this_node = json!({
        "ids": app.suppressions.len(),
        "memoryBytes": app.suppressions.memory_bytes(),
    });
    Ok(Json(
        json!({ "data": ids, "next": next.flatten(), "thisNode": this_node }),
    ))
}

/// Usage days with suppressed events: `events` counts stored events,
/// `suppressed` the calls dropped for suppressed users, `received` both.
pub fn with_suppressed(
    days: Vec<UsageDay>,
    suppressed: Vec<SuppressedCount>,
) -> Vec<super::sources::UsageView> {
    let mut by_day: std::collections::BTreeMap<String, (u64, u64, u64, u64)> = Default::default();
    for d in days {
        let e = by_day.entry(d.day).or_default();
        e.0 += d.api_calls;
        e.1 += d.events;
        e.3 += d.duplicates;
    }
    for s in suppressed {
        by_day.entry(s.day).or_default().2 += s.events;
    }
    by_day
        .into_iter()
        .map(
            |(day, (api_calls, events, suppressed, duplicates))| super::sources::UsageView {
                day,
                api_calls,
                events,
                suppressed,
                duplicates,
                received: events + suppressed + duplicates,
                blocked: 0,
                blocked_events: Default::default(),
            },
        )
        .collect()
}

fn summary(r: &Regulation) -> Value {
    json!({
        "id": r.id,
        "regulationType": r.regulation_type,
        "subjectType": "USER_ID",
        "source_id": r.source_id,
        "status": r.status,
        "subjects": r.subjects,
        "subjectsDone": r.subjects_done,
        "createdAt": r.created_at,
        "finishedAt": r.finished_at,
        "error": r.error,
    })
}

fn view(d: &RegulationDetail) -> Value {
    let mut out = summary(&d.regulation);
    let subjects: Vec<Value> = d
        .subjects
        .iter()
        .map(|s| {
            json!({
                "subjectId": s.subject_id,
                "done": s.done,
                "affectedSources": s.affected_sources,
                "eventsPurged": s.events_purged,
            })
        })
        .collect();
    let notifications: Vec<Value> = d
        .notifications
        .iter()
        .map(|n| {
            json!({
                "subjectId": n.subject_id,
                "source_id": n.source_id,
                "source_ids": n.source_ids,
                "destination_id": n.destination_id,
                "delivery_id": n.delivery_id,
                "state": n.state,
                "attempts": n.attempts,
            })
        })
        .collect();
    out["subjectDetails"] = Value::Array(subjects);
    out["notifications"] = Value::Array(notifications);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    fn field_of(e: ApiError) -> String {
        format!("{e:?}")
    }

    #[test]
    fn bad_requests_name_the_field() {
        let empty = parse(&body(
            json!({"regulationType": "DELETE_ONLY", "subjectIds": []}),
        ));
        assert!(field_of(empty.unwrap_err()).contains("subjectIds"));
        let many: Vec<String> = (0..=MAX_SUBJECTS).map(|i| format!("u{i}")).collect();
        let over = parse(&body(
            json!({"regulationType": "DELETE_ONLY", "subjectIds": many}),
        ));
        assert!(field_of(over.unwrap_err()).contains("at most 5000"));
        let kind = parse(&body(
            json!({"regulationType": "FORGET", "subjectIds": ["u"]}),
        ));
        assert!(field_of(kind.unwrap_err()).contains("regulationType"));
    }

    #[test]
    fn duplicate_ids_count_once() {
        let (_, ids, _) = parse(&body(json!({
            "regulationType": "SUPPRESS_ONLY", "subjectIds": ["a", "b", "a"]
        })))
        .unwrap_or_default();
        assert_eq!(ids, vec!["a".to_string(), "b".to_string()]);
    }
}
