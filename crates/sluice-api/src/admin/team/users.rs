//! `/api/v1/users`: people who sign in to the dashboard with a password.
//! Each change is written to the audit log in its own transaction.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sluice_store::{NewUser, Role, User, UserPatch, keys};
use utoipa::ToSchema;

use super::{role, username};
use crate::AppState;
use crate::admin::extract::{JsonObject, Params, known_fields, opt_field};
use crate::admin::paging;
use crate::audit::{in_change, json_of};
use crate::error::{ApiError, ApiResult};
use crate::openapi::schemas::{AfterQuery, ErrorBody, ListPage};
use crate::password;
use crate::path_param::PathParam;
use crate::principal::Actor;

/// A user as the API shows it: never the password or its hash.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct UserView {
    #[schema(example = "usr_Fq3LrW0xJm2dTz8c")]
    pub id: String,
    #[schema(example = "alice@example.com")]
    pub username: String,
    pub role: Role,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

pub fn view(u: &User) -> UserView {
    UserView {
        id: u.id.clone(),
        username: u.username.clone(),
        role: u.role,
        created_at: u.created_at,
        updated_at: u.updated_at,
    }
}

/// The body of `POST /users`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateUser {
    /// 1 to 64 letters, digits or `. _ @ + -`; stored lower-cased.
    pub username: String,
    pub role: Role,
    /// At least 12 characters, at most 1024 bytes.
    pub password: String,
}

/// The body of `PATCH /users/{id}`: any of these.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateUser {
    pub role: Option<Role>,
    /// A new password; the user's sessions are signed out.
    pub password: Option<String>,
}

pub const CREATE_FIELDS: &[&str] = &["username", "role", "password"];
pub const UPDATE_FIELDS: &[&str] = &["role", "password"];

fn password_field(body: &Map<String, Value>) -> ApiResult<Option<String>> {
    let p = opt_field(body, "password", Value::as_str, "a string")?;
    if let Some(p) = p {
        password::check("password", p)?;
    }
    Ok(p.map(str::to_owned))
}

#[utoipa::path(post, path = "/users", tag = "team", operation_id = "users_create", request_body = CreateUser,
    responses(
        (status = 201, body = UserView),
        (status = 400, description = "`invalid_json`, `invalid_field`", body = ErrorBody),
        (status = 409, description = "`conflict`: the username is taken", body = ErrorBody),
    ))]
pub async fn create(
    State(app): State<Arc<AppState>>,
    actor: Actor,
    JsonObject(body): JsonObject,
) -> ApiResult<(StatusCode, Json<UserView>)> {
    known_fields(&body, CREATE_FIELDS)?;
    let name = username(&body, "username")?;
    let role = role(&body, "role")?.ok_or_else(|| ApiError::invalid("role", "is required"))?;
    let pw = password_field(&body)?.ok_or_else(|| ApiError::invalid("password", "is required"))?;
    let id = keys::new_id("usr");
    let now = Utc::now();
    let shown = UserView {
        id: id.clone(),
        username: name.clone(),
        role,
        created_at: now,
        updated_at: now,
    };
    let audit = in_change(&actor, "user", "create", &id, None, json_of(&shown));
    let new = NewUser {
        id,
        username: name,
        role,
        password_hash: password::hash(pw).await?,
    };
    let user = app
        .store
        .create_user(new, audit)
        .await
        .map_err(|e| match e {
            sluice_store::StoreError::Conflict(_) => {
                ApiError::new(StatusCode::CONFLICT, "conflict", "username is taken")
            }
            other => other.into(),
        })?;
    Ok((StatusCode::CREATED, Json(view(&user))))
}

#[utoipa::path(get, path = "/users", tag = "team", operation_id = "users_list", params(AfterQuery),
    responses(
        (status = 200, description = "A page of the users, by username", body = ListPage<UserView>),
        (status = 400, description = "`invalid_query`", body = ErrorBody),
    ))]
pub async fn list(
    State(app): State<Arc<AppState>>,
    params: Params,
) -> ApiResult<Json<ListPage<UserView>>> {
    let all = app.store.list_users().await?;
    Ok(Json(paging::page_of(
        all,
        |u| u.id.as_str(),
        view,
        &params,
    )?))
}

pub(crate) async fn find(app: &AppState, id: &str) -> ApiResult<User> {
    app.store
        .get_user(id)
        .await?
        .ok_or_else(|| ApiError::not_found("user"))
}

#[utoipa::path(get, path = "/users/{id}", tag = "team", operation_id = "users_get", params(("id" = String, Path)),
    responses(
        (status = 200, body = UserView),
        (status = 404, description = "`not_found`", body = ErrorBody),
    ))]
pub async fn get(
    State(app): State<Arc<AppState>>,
    PathParam(id): PathParam<String>,
) -> ApiResult<Json<UserView>> {
    Ok(Json(view(&find(&app, &id).await?)))
}

/// Changes a user's role or password. A new password signs the user out
/// of every session.
#[utoipa::path(patch, path = "/users/{id}", tag = "team", operation_id = "users_update", params(("id" = String, Path)),
    request_body = UpdateUser,
    responses(
        (status = 200, body = UserView),
        (status = 400, description = "`invalid_json`, `invalid_field`", body = ErrorBody),
        (status = 404, description = "`not_found`", body = ErrorBody),
    ))]
pub async fn update(
    State(app): State<Arc<AppState>>,
    actor: Actor,
    PathParam(id): PathParam<String>,
    JsonObject(body): JsonObject,
) -> ApiResult<Json<UserView>> {
    known_fields(&body, UPDATE_FIELDS)?;
    let new_role = role(&body, "role")?;
    let pw = password_field(&body)?;
    let current = find(&app, &id).await?;
    let mut after = view(&current);
    after.role = new_role.unwrap_or(current.role);
    after.updated_at = Utc::now();
    let action = if pw.is_some() {
        "update-password"
    } else {
        "update"
    };
    let mut after_json = json_of(&after);
    if pw.is_some()
        && let Some(text) = after_json.as_mut()
    {
        // Say that the password changed, never what to.
        let mut v: Value = serde_json::from_str(text).unwrap_or_default();
        v["password_changed"] = Value::Bool(true);
        *text = v.to_string();
    }
    let audit = in_change(
        &actor,
        "user",
        action,
        &id,
        json_of(&view(&current)),
        after_json,
    );
    let patch = UserPatch {
        role: new_role,
        password_hash: match pw.clone() {
            Some(p) => Some(password::hash(p).await?),
            None => None,
        },
    };
    let user = app
        .store
        .update_user(&id, patch, audit)
        .await?
        .ok_or_else(|| ApiError::not_found("user"))?;
    if pw.is_some() {
        super::sessions::revoke(&app, &actor, &id, None).await?;
    }
    Ok(Json(view(&user)))
}

/// Deletes a user, their API tokens and their sessions.
#[utoipa::path(delete, path = "/users/{id}", tag = "team", operation_id = "users_delete", params(("id" = String, Path)),
    responses(
        (status = 204, description = "Deleted; their tokens stop working and their sessions are signed out"),
        (status = 404, description = "`not_found`", body = ErrorBody),
    ))]
pub async fn delete(
    State(app): State<Arc<AppState>>,
    actor: Actor,
    PathParam(id): PathParam<String>,
) -> ApiResult<StatusCode> {
    let current = find(&app, &id).await?;
    let audit = in_change(
        &actor,
        "user",
        "delete",
        &id,
        json_of(&view(&current)),
        None,
    );
    let now = Utc::now().timestamp();
    if !app.store.delete_user(&id, now, audit).await? {
        return Err(ApiError::not_found("user"));
    }
    Ok(StatusCode::NO_CONTENT)
}
