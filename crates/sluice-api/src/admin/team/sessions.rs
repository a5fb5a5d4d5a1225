//! `/api/v1/users/{id}/sessions`: a user's dashboard sessions, listed and
//! signed out one by one or all at once. A signed-out session's id goes
//! to the store's revoked sessions, which every node checks on every
//! request: it is refused everywhere at once, and after restarts.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::json;
use sluice_store::UserSession;
use utoipa::ToSchema;

use crate::AppState;
use crate::audit::in_change;
use crate::error::{ApiError, ApiResult};
use crate::openapi::schemas::{ErrorBody, List};
use crate::path_param::PathParam;
use crate::principal::Actor;

/// A signed-in session. Its id alone cannot sign anyone in: the cookie
/// also carries a MAC only the server can make.
#[derive(Debug, Serialize, ToSchema)]
pub struct SessionView {
    pub id: String,
    pub signed_in_at: Option<DateTime<Utc>>,
    pub expires_at: Option<DateTime<Utc>>,
    pub ip: Option<String>,
    pub user_agent: Option<String>,
}

pub fn view(s: &UserSession) -> SessionView {
    SessionView {
        id: s.id.clone(),
        signed_in_at: DateTime::from_timestamp(s.created_at, 0),
        expires_at: DateTime::from_timestamp(s.expires_at, 0),
        ip: s.ip.clone(),
        user_agent: s.user_agent.clone(),
    }
}

/// How many sessions were signed out.
#[derive(Debug, Serialize, ToSchema)]
pub struct Revoked {
    pub revoked: u64,
}

/// Signs out the user's sessions (or only `only`), with its audit entry in
/// the same transaction; returns how many.
pub async fn revoke(
    app: &AppState,
    actor: &Actor,
    user_id: &str,
    only: Option<&str>,
) -> ApiResult<u64> {
    let action = if only.is_some() {
        "revoke"
    } else {
        "revoke-all"
    };
    let after = json!({"user_id": user_id, "session": only}).to_string();
    let audit = in_change(
        actor,
        "session",
        action,
        only.unwrap_or(user_id),
        None,
        Some(after),
    );
    let now = Utc::now().timestamp();
    Ok(app
        .store
        .revoke_user_sessions(user_id, only, now, audit)
        .await?)
}

#[utoipa::path(get, path = "/users/{id}/sessions", tag = "team", operation_id = "sessions_list", params(("id" = String, Path)),
    responses(
        (status = 200, description = "The user's live sessions, newest first", body = List<SessionView>),
        (status = 404, description = "`not_found`", body = ErrorBody),
    ))]
pub async fn list(
    State(app): State<Arc<AppState>>,
    PathParam(id): PathParam<String>,
) -> ApiResult<Json<List<SessionView>>> {
    super::users::find(&app, &id).await?;
    let now = Utc::now().timestamp();
    let data = app
        .store
        .list_user_sessions(&id, now)
        .await?
        .iter()
        .map(view)
        .collect();
    Ok(Json(List { data }))
}

#[utoipa::path(delete, path = "/users/{id}/sessions", tag = "team", operation_id = "sessions_revoke_all", params(("id" = String, Path)),
    responses(
        (status = 200, description = "Every session of the user is signed out", body = Revoked),
        (status = 404, description = "`not_found`", body = ErrorBody),
    ))]
pub async fn revoke_all(
    State(app): State<Arc<AppState>>,
    actor: Actor,
    PathParam(id): PathParam<String>,
) -> ApiResult<Json<Revoked>> {
    super::users::find(&app, &id).await?;
    let revoked = revoke(&app, &actor, &id, None).await?;
    Ok(Json(Revoked { revoked }))
}

#[utoipa::path(delete, path = "/users/{id}/sessions/{session_id}", tag = "team", operation_id = "sessions_revoke_one",
    params(("id" = String, Path), ("session_id" = String, Path)),
    responses(
        (status = 204, description = "Signed out"),
        (status = 404, description = "`not_found`: no such user or live session", body = ErrorBody),
    ))]
pub async fn revoke_one(
    State(app): State<Arc<AppState>>,
    actor: Actor,
    PathParam((id, session)): PathParam<(String, String)>,
) -> ApiResult<StatusCode> {
    super::users::find(&app, &id).await?;
    match revoke(&app, &actor, &id, Some(&session)).await? {
        0 => Err(ApiError::not_found("session")),
        _ => Ok(StatusCode::NO_CONTENT),
    }
}
