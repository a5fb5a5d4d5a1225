//! `POST /api/v1/me/password`: a user changes their own password, giving
//! the current one. The rules for the new one are those of user creation
//! ([`crate::password::check`]). On success every other session of the
//! user is signed out (the dashboard session the change was made from
//! stays), in the transaction that stores the new hash and its audit
//! entry. A wrong current password changes nothing; repeated ones make
//! the user wait ([`crate::password::guesses`]). The admin token and API
//! tokens of no user have no password here.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::header::RETRY_AFTER;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::Utc;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sluice_store::{PasswordChange, StoreError};
use utoipa::ToSchema;

use super::users::{UserView, find, view};
use crate::AppState;
use crate::admin::extract::{JsonObject, known_fields, opt_field};
use crate::audit::{in_change, json_of};
use crate::error::{ApiError, ApiResult};
use crate::openapi::schemas::ErrorBody;
use crate::password::{self, with_guesses};
use crate::principal::{Actor, Principal};

/// The fields of the body.
pub const FIELDS: &[&str] = &["current_password", "new_password"];

/// The body of `POST /me/password`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChangePassword {
    /// The password the user signs in with now.
    pub current_password: String,
    /// At least 12 characters, at most 1024 bytes, not the current one.
    pub new_password: String,
}

/// The answer to a password change.
#[derive(Debug, Serialize, ToSchema)]
pub struct PasswordChanged {
    pub user: UserView,
    /// How many of the user's dashboard sessions were signed out: all of
    /// them but the one the change was made from.
    pub sessions_signed_out: u64,
}

fn now_secs() -> f64 {
    Utc::now().timestamp_millis() as f64 / 1000.0
}

/// The user whose password the caller may change: a signed-in user, or
/// the user an API token belongs to.
fn own_user(actor: &Actor) -> ApiResult<String> {
    let refuse = |why: String| {
        ApiError::bad_request(
            "not_a_user",
            format!(
                "{why}; only a user, signed in or through an API token of theirs, changes their own password here"
            ),
        )
    };
    match &actor.principal {
        Principal::User { id, .. } => Ok(id.clone()),
        Principal::Token {
            user_id: Some(user),
            ..
        } => Ok(user.clone()),
        Principal::Token { name, .. } => Err(refuse(format!(
            "the API token '{name}' belongs to no user, so it has no password to change"
        ))),
        Principal::AdminToken => Err(refuse(
            "the admin token has no password to change (replace it with admin_token or SLUICE_ADMIN_TOKEN)".into(),
        )),
    }
}

/// How long the caller must wait before their current password is checked
/// again, if at all (for `Retry-After`).
pub fn retry_after(actor: &Actor) -> Option<i64> {
    let user = own_user(actor).ok()?;
    with_guesses(|g| g.check(&user, now_secs())).err()
}

fn too_many(wait: i64) -> ApiError {
    let unit = if wait == 1 { "second" } else { "seconds" };
    ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        "too_many_attempts",
        format!("too many wrong current passwords: wait {wait} {unit}, then try again"),
    )
}

/// Changes the caller's own password from `current` to `new`, keeping the
/// session `keep_session` (the dashboard's) signed in and signing out every
/// other session of the user. The dashboard's account page calls this too.
pub async fn change_own(
    app: &AppState,
    actor: &Actor,
    current: &str,
    new: &str,
    keep_session: Option<&str>,
) -> ApiResult<PasswordChanged> {
    let user_id = own_user(actor)?;
    password::check("new_password", new)?;
    if let Err(wait) = with_guesses(|g| g.check(&user_id, now_secs())) {
        return Err(too_many(wait));
    }
    let user = find(app, &user_id).await?;
    let stored = user.password_hash.clone();
    if !password::verify(current.to_owned(), Some(stored.clone())).await {
        with_guesses(|g| g.failure(&user_id, now_secs()));
        return Err(ApiError::bad_request(
            "wrong_password",
            "current_password: is not your current password; nothing was changed",
        ));
    }
    with_guesses(|g| g.success(&user_id));
    if current == new {
        return Err(ApiError::invalid(
            "new_password",
            "is the current password; choose another",
        ));
    }
    let mut after: Value = serde_json::to_value(view(&user)).unwrap_or_default();
    after["updated_at"] = serde_json::to_value(Utc::now()).unwrap_or_default();
    // Say that the password changed and who stays signed in, never the password.
    after["password_changed"] = Value::Bool(true);
    after["kept_session"] = keep_session.map_or(Value::Null, |s| Value::String(s.to_owned()));
    let audit = in_change(
        actor,
        "user",
        "change-password",
        &user_id,
        json_of(&view(&user)),
        json_of(&after),
    );
    let change = PasswordChange {
        user_id: user_id.clone(),
        expected_hash: stored,
        new_hash: password::hash(new.to_owned()).await?,
        keep_session: keep_session.map(str::to_owned),
        now_secs: Utc::now().timestamp(),
    };
    match app.store.change_password(change, audit).await? {
        Some((user, revoked)) => Ok(PasswordChanged {
            user: view(&user),
            sessions_signed_out: revoked,
        }),
        None => Err(StoreError::Conflict(
            "the password was changed meanwhile; nothing was changed, try again".into(),
        )
        .into()),
    }
}

/// Changes the caller's own password. A user's API token may call it for
/// its user; the token keeps working, and the user's dashboard sessions
/// are signed out.
#[utoipa::path(post, path = "/me/password", tag = "team", operation_id = "me_change_password",
    request_body = ChangePassword,
    responses(
        (status = 200, description = "Changed; the user's other sessions are signed out", body = PasswordChanged),
        (status = 400, description = "`invalid_json`, `invalid_field` (the new password breaks a rule), `wrong_password` (nothing changed), `not_a_user` (the admin token, or an API token of no user)", body = ErrorBody),
        (status = 409, description = "`conflict`: the password changed meanwhile; nothing changed", body = ErrorBody),
        (status = 429, description = "`too_many_attempts`: too many wrong current passwords; `Retry-After` says when to try again", body = ErrorBody),
    ))]
pub async fn change_password(
    State(app): State<Arc<AppState>>,
    actor: Actor,
    JsonObject(body): JsonObject,
) -> Response {
    let fields = || -> ApiResult<(String, String)> {
        known_fields(&body, FIELDS)?;
        let text = |f: &str| {
            opt_field(&body, f, Value::as_str, "a string")?
                .map(str::to_owned)
                .ok_or_else(|| ApiError::invalid(f, "is required"))
        };
        Ok((text("current_password")?, text("new_password")?))
    };
    let answer = match fields() {
        Ok((current, new)) => change_own(&app, &actor, &current, &new, None).await,
        Err(e) => Err(e),
    };
    match answer {
        Ok(changed) => Json(changed).into_response(),
        Err(e) => {
            let retry = (e.status == StatusCode::TOO_MANY_REQUESTS)
                .then(|| retry_after(&actor))
                .flatten();
            let mut res = e.into_response();
            if let Some(wait) = retry {
                res.headers_mut()
                    .insert(RETRY_AFTER, HeaderValue::from(wait));
            }
            res
        }
    }
}
