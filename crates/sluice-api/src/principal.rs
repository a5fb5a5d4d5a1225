//! Who is calling: the [`Principal`] a credential names (the admin token,
//! an API token, a signed-in user) and the [`Actor`] the audit log records
//! (the principal, the channel, the client's address and user agent).
//!
//! API tokens look like `slu_` and 40 letters and digits. Only their
//! SHA-256 is stored; a bearer token is looked up by its hash and the
//! digests compared in constant time, as write keys are. A token that
//! belongs to a user is capped by that user's current role, and stops
//! working when the user is deleted.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::HeaderMap;
use axum::http::header::USER_AGENT;
use axum::http::request::Parts;
use chrono::{Duration, Utc};
use sluice_store::{Role, keys};

use crate::AppState;
use crate::error::{ApiError, ApiResult};
use crate::ingest::client_ip;

/// The prefix of every API token.
pub const TOKEN_PREFIX: &str = "slu_";

/// What [`Actor::principal`]'s name is for the admin token.
pub const ADMIN_TOKEN_NAME: &str = "admin token";

/// A token's `last_used_at` is written at most this often.
const TOUCH_EVERY_MINUTES: i64 = 5;

/// Who a credential names, with the role it acts with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// The admin token: every right, for bootstrap and automation.
    AdminToken,
    /// An API token.
    Token {
        id: String,
        name: String,
        /// The token's role, capped by its user's.
        role: Role,
        user_id: Option<String>,
    },
    /// A user signed in to the dashboard.
    User {
        id: String,
        username: String,
        role: Role,
    },
}

impl Principal {
    pub fn role(&self) -> Role {
        match self {
            Principal::AdminToken => Role::Admin,
            Principal::Token { role, .. } | Principal::User { role, .. } => *role,
        }
    }

    /// `admin_token`, `token` or `user`, as the audit log names kinds.
    pub fn kind(&self) -> &'static str {
        match self {
            Principal::AdminToken => "admin_token",
            Principal::Token { .. } => "token",
            Principal::User { .. } => "user",
        }
    }

    pub fn id(&self) -> Option<&str> {
        match self {
            Principal::AdminToken => None,
            Principal::Token { id, .. } | Principal::User { id, .. } => Some(id),
        }
    }

    /// The username, the token's name, or `admin token`.
    pub fn name(&self) -> &str {
        match self {
            Principal::AdminToken => ADMIN_TOKEN_NAME,
            Principal::Token { name, .. } => name,
            Principal::User { username, .. } => username,
        }
    }
}

/// Which way a change came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    Api,
    Dashboard,
    /// The admin API, called by the `sluice` command line (its user agent).
    Cli,
}

impl Via {
    pub fn as_str(self) -> &'static str {
        match self {
            Via::Api => "api",
            Via::Dashboard => "dashboard",
            Via::Cli => "cli",
        }
    }
}

/// Who made a request, and from where: what the audit log records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    pub principal: Principal,
    pub via: Via,
    pub ip: Option<String>,
    pub user_agent: Option<String>,
}

impl Actor {
    /// The actor of a request with these headers from `peer`.
    pub fn of_request(
        principal: Principal,
        headers: &HeaderMap,
        peer: Option<SocketAddr>,
        trust_forwarded_for: bool,
        via: Via,
    ) -> Actor {
        let user_agent = headers
            .get(USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .map(|v| v.chars().take(300).collect::<String>());
        let via = match (&user_agent, via) {
            (Some(ua), Via::Api) if ua.starts_with("sluice-cli/") => Via::Cli,
            _ => via,
        };
        Actor {
            principal,
            via,
            ip: peer.map(|p| client_ip(headers, p, trust_forwarded_for).to_string()),
            user_agent,
        }
    }

    pub fn role(&self) -> Role {
        self.principal.role()
    }
}

/// The actor the admin router's checks put on the request.
impl FromRequestParts<Arc<AppState>> for Actor {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &Arc<AppState>) -> ApiResult<Actor> {
        parts
            .extensions
            .get::<Actor>()
            .cloned()
            .ok_or_else(|| ApiError::unauthorized("no credential was checked for this request"))
    }
}

/// The peer address axum recorded for a request, if any.
pub fn peer(parts: &axum::http::Extensions) -> Option<SocketAddr> {
    parts.get::<ConnectInfo<SocketAddr>>().map(|c| c.0)
}

/// A new API token and its hint (its first 8 characters and `…`).
pub fn new_token() -> (String, String) {
    let token = format!("{TOKEN_PREFIX}{}", keys::new_token());
    let hint: String = token.chars().take(8).collect();
    (token.clone(), format!("{hint}…"))
}

/// The principal of `Authorization: Bearer <token>`: the admin token, or
/// an API token looked up in the store within `storage.timeout_ms`.
pub async fn authenticate(app: &AppState, headers: &HeaderMap) -> ApiResult<Principal> {
    let token = crate::auth::bearer_token(headers).ok_or_else(|| {
        ApiError::unauthorized("admin API needs 'Authorization: Bearer <admin token or API token>'")
    })?;
    if crate::admin::admin_token_matches(app, token) {
        return Ok(Principal::AdminToken);
    }
    let invalid = || ApiError::unauthorized("invalid admin token or API token");
    if !token.starts_with(TOKEN_PREFIX) {
        return Err(invalid());
    }
    let found = tokio::time::timeout(app.store_timeout, lookup(app, token))
        .await
        .map_err(|_| ApiError::store_timeout())??;
    found.ok_or_else(invalid)
}

async fn lookup(app: &AppState, token: &str) -> ApiResult<Option<Principal>> {
    let Some(stored) = app
        .store
        .get_api_token_by_hash(&keys::hash_secret(token))
        .await?
    else {
        return Ok(None);
    };
    if !keys::verify_secret(token, &stored.token_hash) {
        return Ok(None);
    }
    let role = match &stored.user_id {
        None => stored.role,
        Some(user) => match app.store.get_user(user).await? {
            Some(u) => stored.role.min(u.role),
            None => return Ok(None),
        },
    };
    let now = Utc::now();
    if stored
        .last_used_at
        .is_none_or(|t| now - t >= Duration::minutes(TOUCH_EVERY_MINUTES))
    {
        let store = Arc::clone(&app.store);
        let id = stored.id.clone();
        tokio::spawn(async move {
            if let Err(e) = store.touch_api_token(&id, now).await {
                tracing::debug!(error = %e, "recording an API token's last use");
            }
        });
    }
    Ok(Some(Principal::Token {
        id: stored.id,
        name: stored.name,
        role,
        user_id: stored.user_id,
    }))
}
