//! `/api/v1/tokens`: API tokens for people and automation. A token is shown
//! once, in the answer that creates it; afterwards only its hint. A token
//! that belongs to a user may not have a higher role than the user, and
//! acts with the lower of the two should the user's role drop later.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sluice_store::{ApiToken, NewApiToken, Role, StoreError, keys};
use utoipa::ToSchema;

use super::role;
use crate::AppState;
use crate::admin::extract::{JsonObject, Params, known_fields, opt_field, required_name};
use crate::admin::paging;
use crate::audit::{in_change, json_of};
use crate::error::{ApiError, ApiResult};
use crate::openapi::schemas::{AfterQuery, ErrorBody, ListPage};
use crate::path_param::PathParam;
use crate::principal::{self, Actor};

/// A token as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TokenView {
    #[schema(example = "tok_b7Qe0ZkP1sLw9XyA")]
    pub id: String,
    pub name: String,
    pub role: Role,
    /// The user it belongs to; `null` for automation.
    pub user_id: Option<String>,
    /// The token's first 8 characters and `…`.
    #[schema(example = "slu_Ab3d…")]
    pub token_hint: String,
    pub created_at: DateTime<Utc>,
    /// Roughly when it was last used (to within 5 minutes).
    pub last_used_at: Option<DateTime<Utc>>,
    /// The token in full: only in the answer to creation.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub token: Option<String>,
}

pub fn view(t: &ApiToken) -> TokenView {
    TokenView {
        id: t.id.clone(),
        name: t.name.clone(),
        role: t.role,
        user_id: t.user_id.clone(),
        token_hint: t.token_hint.clone(),
        created_at: t.created_at,
        last_used_at: t.last_used_at,
        token: None,
    }
}

/// The body of `POST /tokens`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateToken {
    /// What it is for: 1 to 200 characters.
    pub name: String,
    pub role: Role,
    /// The user it belongs to; omit for automation.
    pub user_id: Option<String>,
}

pub const CREATE_FIELDS: &[&str] = &["name", "role", "user_id"];

#[utoipa::path(post, path = "/tokens", tag = "team", operation_id = "tokens_create", request_body = CreateToken,
    responses(
        (status = 201, description = "Created; the only answer that shows `token`", body = TokenView),
        (status = 400, description = "`invalid_json`, `invalid_field` (an unknown user, a role above the user's)", body = ErrorBody),
    ))]
pub async fn create(
    State(app): State<Arc<AppState>>,
    actor: Actor,
    JsonObject(body): JsonObject,
) -> ApiResult<(StatusCode, Json<TokenView>)> {
    known_fields(&body, CREATE_FIELDS)?;
    let name = required_name(&body, "name")?;
    let role = role(&body, "role")?.ok_or_else(|| ApiError::invalid("role", "is required"))?;
    let user_id = opt_field(&body, "user_id", Value::as_str, "a string")?.map(str::to_owned);
    if let Some(user) = &user_id {
        let found = app.store.get_user(user).await?;
        let found =
            found.ok_or_else(|| ApiError::invalid("user_id", format!("unknown user '{user}'")))?;
        if role > found.role {
            return Err(ApiError::invalid(
                "role",
                format!("must not be above the user's role ({})", found.role),
            ));
        }
    }
    let (secret, hint) = principal::new_token();
    let id = keys::new_id("tok");
    let shown = TokenView {
        id: id.clone(),
        name: name.clone(),
        role,
        user_id: user_id.clone(),
        token_hint: hint.clone(),
        created_at: Utc::now(),
        last_used_at: None,
        token: None,
    };
    let audit = in_change(&actor, "token", "create", &id, None, json_of(&shown));
    let new = NewApiToken {
        id,
        name,
        user_id,
        role,
        token_hash: keys::hash_secret(&secret),
        token_hint: hint,
    };
    let token = app
        .store
        .create_api_token(new, audit)
        .await
        .map_err(|e| match e {
            StoreError::NotFound(what) => {
                ApiError::invalid("user_id", format!("{what} does not exist"))
            }
            other => other.into(),
        })?;
    let mut out = view(&token);
    out.token = Some(secret);
    Ok((StatusCode::CREATED, Json(out)))
}

#[utoipa::path(get, path = "/tokens", tag = "team", operation_id = "tokens_list", params(AfterQuery),
    responses(
        (status = 200, description = "A page of the tokens, oldest first, with their hints only", body = ListPage<TokenView>),
        (status = 400, description = "`invalid_query`", body = ErrorBody),
    ))]
pub async fn list(
    State(app): State<Arc<AppState>>,
    params: Params,
) -> ApiResult<Json<ListPage<TokenView>>> {
    let all = app.store.list_api_tokens().await?;
    Ok(Json(paging::page_of(
        all,
        |t| t.id.as_str(),
        view,
        &params,
    )?))
}

async fn find(app: &AppState, id: &str) -> ApiResult<ApiToken> {
    app.store
        .get_api_token(id)
        .await?
        .ok_or_else(|| ApiError::not_found("token"))
}

#[utoipa::path(get, path = "/tokens/{id}", tag = "team", operation_id = "tokens_get", params(("id" = String, Path)),
    responses(
        (status = 200, body = TokenView),
        (status = 404, description = "`not_found`", body = ErrorBody),
    ))]
pub async fn get(
    State(app): State<Arc<AppState>>,
    PathParam(id): PathParam<String>,
) -> ApiResult<Json<TokenView>> {
    Ok(Json(view(&find(&app, &id).await?)))
}

#[utoipa::path(delete, path = "/tokens/{id}", tag = "team", operation_id = "tokens_delete", params(("id" = String, Path)),
    responses(
        (status = 204, description = "Deleted; it stops working at once on every node"),
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
        "token",
        "delete",
        &id,
        json_of(&view(&current)),
        None,
    );
    if !app.store.delete_api_token(&id, audit).await? {
        return Err(ApiError::not_found("token"));
    }
    Ok(StatusCode::NO_CONTENT)
}
