//! User deletion and suppression (`/regulations`, `/suppressions`), modelled
//! on Segment's Regulations API; see `docs/privacy.md`. The request only
//! records the regulation (and applies its suppression change); the purge
//! and the delete notifications run as a durable job in `sluice-server`.

mod input;
use input::parse;
pub use input::*;

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use chrono::Utc;
use serde_json::{Value, json};
use sluice_store::{NewRegulation, Regulation, RegulationDetail, SuppressedCount, UsageDay, keys};

use crate::AppState;
use crate::admin::extract::Params;
use crate::audit::{After, Target, json_of, record};
use crate::error::{ApiError, ApiResult};
use crate::openapi::schemas::ErrorBody;
use crate::path_param::PathParam;
use crate::principal::Actor;

/// `POST /regulations`: records the regulation and answers at once.
#[utoipa::path(post, path = "/regulations", tag = "privacy", request_body = RegulationInput,
    responses(
        (status = 201, description = "`{id, regulateId, regulationType, subjectType, source_id, status, subjects, subjectsDone, createdAt, finishedAt}` (docs/privacy.md)", body = Object),
        (status = 400, description = "`invalid_json`, `body_too_large`, `invalid_field`", body = ErrorBody),
    ))]
pub async fn create(
    State(app): State<Arc<AppState>>,
    actor: Actor,
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
    let id = keys::new_id("reg");
    let target = Target::new(sluice_store::audit::REGULATION, "create", Some(&id));
    let subjects = subject_ids.clone();
    let change = async {
        let regulation = app
            .store
            .create_regulation(NewRegulation {
                id,
                regulation_type: kind,
                subject_ids,
                source_id,
                suppress,
                purge,
                notify,
                now: Utc::now(),
            })
            .await?;
        Ok(regulation)
    };
    // Regulations are always in the audit log: what was asked, by whom. The
    // subjects are named as the regulation record names finished ones, by
    // the SHA-256 of each id, so that a deletion leaves no copy of the ids.
    let hashes: Vec<String> = subjects
        .iter()
        .map(|s| format!("sha256:{}", keys::hash_secret(s)))
        .collect();
    let regulation = record(&app, &actor, target, None, change, |r| {
        After::state(json_of(&json!({
            "regulationType": r.regulation_type, "subjects": hashes.len(),
            "subjectSha256": hashes, "source_id": r.source_id,
        })))
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

/// Newest first, a page at a time: `next_before` names the last of a full
/// page; pass it as `before` for the next one.
#[utoipa::path(get, path = "/regulations", tag = "privacy",
    params(
        ("limit" = Option<u32>, Query, description = "1 to 1000, default 100"),
        ("before" = Option<String>, Query, description = "A regulation id: the page after it (older ones)"),
    ),
    responses(
        (status = 200, description = "`{data: [regulation], next_before}`", body = Object),
        (status = 400, description = "`invalid_query`", body = ErrorBody),
    ))]
pub async fn list(State(app): State<Arc<AppState>>, params: Params) -> ApiResult<Json<Value>> {
    let limit = params.limit(100, 1000)?;
    let page = app
        .store
        .list_regulations(limit, params.str("before"))
        .await?;
    let next_before = (page.len() == limit as usize)
        .then(|| page.last().map(|r| r.id.clone()))
        .flatten();
    let data: Vec<Value> = page.iter().map(summary).collect();
    Ok(Json(json!({ "data": data, "next_before": next_before })))
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
