//! `GET /api/v1/audit`: the audit log, newest first, filtered by actor,
//! resource and time, paged with a cursor.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sluice_store::{AuditEntry, AuditQuery};
use utoipa::{IntoParams, ToSchema};

use crate::AppState;
use crate::admin::extract::Params;
use crate::error::{ApiError, ApiResult};
use crate::openapi::schemas::{ErrorBody, Page};

/// Who made a change.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuditActor {
    /// `user`, `token`, `admin_token` or `operator`.
    pub kind: String,
    pub id: Option<String>,
    /// The username, the token's name, or `admin token`.
    pub name: String,
}

/// One change.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuditView {
    pub id: i64,
    pub at: DateTime<Utc>,
    pub actor: AuditActor,
    /// `api`, `dashboard` or `cli`.
    pub via: String,
    pub ip: Option<String>,
    pub user_agent: Option<String>,
    /// `source`, `destination`, `destination_filters`, `source_rules`,
    /// `computed_trait`, `audience`, `delivery`, `regulation`, `user`,
    /// `token`, `session`.
    pub resource: String,
    pub resource_id: Option<String>,
    /// `create`, `update`, `delete`, `rotate-key`, `replace`, `replay`, …
    pub action: String,
    /// The resource before the change, as the admin API shows it (secrets masked).
    #[schema(value_type = Object)]
    pub before: Option<Value>,
    /// The resource after the change, as the admin API shows it (secrets masked).
    #[schema(value_type = Object)]
    pub after: Option<Value>,
    /// False when the change's outcome was not recorded (the entry was
    /// written ahead of it and the server failed or stopped before it
    /// finished): check the resource itself.
    pub confirmed: bool,
}

pub fn view(e: &AuditEntry) -> AuditView {
    let parse = |t: &Option<String>| t.as_deref().and_then(|s| serde_json::from_str(s).ok());
    let n = &e.entry;
    AuditView {
        id: e.id,
        at: n.at,
        actor: AuditActor {
            kind: n.actor_kind.clone(),
            id: n.actor_id.clone(),
            name: n.actor_name.clone(),
        },
        via: n.via.clone(),
        ip: n.ip.clone(),
        user_agent: n.user_agent.clone(),
        resource: n.resource.clone(),
        resource_id: n.resource_id.clone(),
        action: n.action.clone(),
        before: parse(&n.before),
        after: parse(&n.after),
        confirmed: n.confirmed,
    }
}

/// Filters and paging of `GET /audit`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditParams {
    /// A username, token name, `admin token`, or a user's or token's id.
    pub actor: Option<String>,
    /// A resource kind (`source`, `user`, …).
    pub resource: Option<String>,
    /// One resource's id.
    pub resource_id: Option<String>,
    /// RFC 3339: entries at or after.
    pub since: Option<String>,
    /// RFC 3339: entries strictly before.
    pub until: Option<String>,
    /// 1 to 500, default 50.
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<u32>,
    /// The cursor: a previous page's `next_before`.
    pub before: Option<i64>,
}

fn time(params: &Params, name: &str) -> ApiResult<Option<DateTime<Utc>>> {
    params
        .str(name)
        .map(|s| {
            DateTime::parse_from_rfc3339(s)
                .map(|t| t.with_timezone(&Utc))
                .map_err(|_| {
                    ApiError::bad_request(
                        "invalid_query",
                        format!("{name}: must be an RFC 3339 time (2024-03-01T12:00:00Z)"),
                    )
                })
        })
        .transpose()
}

/// The query [`list`] runs for `params`.
pub fn query(params: &Params) -> ApiResult<AuditQuery> {
    Ok(AuditQuery {
        actor: params.str("actor").map(str::to_owned),
        resource: params.str("resource").map(str::to_owned),
        resource_id: params.str("resource_id").map(str::to_owned),
        since: time(params, "since")?,
        until: time(params, "until")?,
        before_id: params.i64("before")?,
        limit: params.limit(50, 500)? as usize,
    })
}

/// One page of entries for `query`, with the cursor of the next.
pub async fn page(app: &AppState, query: AuditQuery) -> ApiResult<Page<AuditView>> {
    let limit = query.limit;
    let entries = app.store.list_audit(query).await?;
    let next_before = (entries.len() == limit)
        .then(|| entries.last().map(|e| e.id))
        .flatten();
    Ok(Page {
        data: entries.iter().map(view).collect(),
        next_before,
    })
}

#[utoipa::path(get, path = "/audit", tag = "team", operation_id = "audit_list", params(AuditParams),
    responses(
        (status = 200, description = "Newest first; `next_before` is an entry id", body = Page<AuditView>),
        (status = 400, description = "`invalid_query`", body = ErrorBody),
    ))]
pub async fn list(
    State(app): State<Arc<AppState>>,
    params: Params,
) -> ApiResult<Json<Page<AuditView>>> {
    Ok(Json(page(&app, query(&params)?).await?))
}
