//! [`TeamStore`]: the people who operate Sluice. Users who sign in to the
//! dashboard with a password, API tokens for people and automation, each
//! with a [`Role`], and the dashboard sessions of users.
//!
//! # Layout
//! - `users`: one row per person; `username` is unique (the admin API
//!   stores it lower-cased), `password_hash` is an argon2id PHC string.
//! - `api_tokens`: one row per token; only the SHA-256 of the token is
//!   kept (`token_hash`, unique) with its first characters (`token_hint`).
//!   A token may belong to a user (`user_id`), whose role then caps it.
//! - `user_sessions`: the signed-in dashboard sessions of users, so that
//!   they can be listed and revoked per user. Revoking one writes its id
//!   to `revoked_sessions` (the table sign-out uses), which every node
//!   checks on every request.
//!
//! # Invariants
//! - **Audited in the same transaction.** Every method that changes a user,
//!   a token or a user's sessions takes the audit entry describing the
//!   change and writes it in the transaction of the change, only when
//!   something changed: the change and its entry commit together or not
//!   at all.
//! - Deleting a user deletes their tokens and revokes their sessions in
//!   the same transaction.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::{NewAuditEntry, Result};

/// What a user or token may do. Ordered: a higher role may do everything a
/// lower one may.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Reads everything but users, tokens, regulations and the audit log;
    /// changes nothing.
    Viewer,
    /// A viewer who also changes sources, destinations, filters, rules,
    /// computed traits and audiences, and replays deliveries.
    Editor,
    /// Everything, users, tokens, regulations and the audit log included.
    Admin,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Viewer, Role::Editor, Role::Admin];

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Editor => "editor",
            Role::Admin => "admin",
        }
    }

    pub fn parse(text: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.as_str() == text)
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A person who signs in to the dashboard.
#[derive(Debug, Clone, PartialEq)]
pub struct User {
    pub id: String,
    pub username: String,
    pub role: Role,
    /// argon2id, PHC string format. Never shown.
    pub password_hash: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// Input to [`TeamStore::create_user`]; the caller draws the id and hashes
/// the password.
#[derive(Debug, Clone)]
pub struct NewUser {
    pub id: String,
    pub username: String,
    pub role: Role,
    pub password_hash: String,
}

/// A partial update of a user; `None` leaves a field alone.
#[derive(Debug, Clone, Default)]
pub struct UserPatch {
    pub role: Option<Role>,
    pub password_hash: Option<String>,
}

/// Input to [`TeamStore::change_password`]: a user changing their own
/// password.
#[derive(Debug, Clone)]
pub struct PasswordChange {
    pub user_id: String,
    /// The hash the caller checked the current password against: the
    /// change is made only while it is still the stored one.
    pub expected_hash: String,
    pub new_hash: String,
    /// The session to keep signed in (the one the change was made from).
    pub keep_session: Option<String>,
    pub now_secs: i64,
}

/// An API token, as stored: never the token itself.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiToken {
    pub id: String,
    pub name: String,
    /// The user it belongs to; `None` for automation.
    pub user_id: Option<String>,
    pub role: Role,
    /// SHA-256 of the token, hex.
    pub token_hash: String,
    /// The token's first characters, for display.
    pub token_hint: String,
    pub created_at: DateTime<Utc>,
    /// Roughly when it was last used (updated at most every few minutes).
    pub last_used_at: Option<DateTime<Utc>>,
}

/// Input to [`TeamStore::create_api_token`].
#[derive(Debug, Clone)]
pub struct NewApiToken {
    pub id: String,
    pub name: String,
    pub user_id: Option<String>,
    pub role: Role,
    pub token_hash: String,
    pub token_hint: String,
}

/// A user's signed-in dashboard session. Times are Unix seconds, as the
/// session cookie carries them.
#[derive(Debug, Clone, PartialEq)]
pub struct UserSession {
    pub id: String,
    pub user_id: String,
    pub created_at: i64,
    pub expires_at: i64,
    pub ip: Option<String>,
    pub user_agent: Option<String>,
}

/// Users, API tokens and user sessions. Every method is atomic.
#[async_trait]
pub trait TeamStore: Send + Sync {
    /// Fails with [`crate::StoreError::Conflict`] when the id or the
    /// username is taken.
    async fn create_user(&self, new: NewUser, audit: NewAuditEntry) -> Result<User>;
    /// Every user, by username.
    async fn list_users(&self) -> Result<Vec<User>>;
    async fn get_user(&self, id: &str) -> Result<Option<User>>;
    async fn get_user_by_username(&self, username: &str) -> Result<Option<User>>;
    /// `None` when there is no such user (and nothing is audited).
    async fn update_user(
        &self,
        id: &str,
        patch: UserPatch,
        audit: NewAuditEntry,
    ) -> Result<Option<User>>;
    /// Replaces the user's password hash, revokes every live session of
    /// the user but `keep_session`, and writes `audit`, in one
    /// transaction. `None`, and nothing changed, when there is no such user
    /// or the stored hash is no longer `expected_hash`; otherwise the user
    /// and how many sessions were revoked.
    async fn change_password(
        &self,
        change: PasswordChange,
        audit: NewAuditEntry,
    ) -> Result<Option<(User, u64)>>;
    /// Deletes a user with their tokens and revokes their sessions (each
    /// stays refused until `expires_at`). False when there was none.
    async fn delete_user(&self, id: &str, now_secs: i64, audit: NewAuditEntry) -> Result<bool>;

    /// Fails with [`crate::StoreError::NotFound`] when `user_id` names no
    /// user, and [`crate::StoreError::Conflict`] on a duplicate id or hash.
    async fn create_api_token(&self, new: NewApiToken, audit: NewAuditEntry) -> Result<ApiToken>;
    /// Every token, oldest first.
    async fn list_api_tokens(&self) -> Result<Vec<ApiToken>>;
    async fn get_api_token(&self, id: &str) -> Result<Option<ApiToken>>;
    /// The token whose secret hashes to `hash` ([`crate::keys::hash_secret`]).
    async fn get_api_token_by_hash(&self, hash: &str) -> Result<Option<ApiToken>>;
    async fn delete_api_token(&self, id: &str, audit: NewAuditEntry) -> Result<bool>;
    /// Records that the token was used at `at`.
    async fn touch_api_token(&self, id: &str, at: DateTime<Utc>) -> Result<()>;

    /// Records a user's new session; sessions that expired before its
    /// `created_at` are deleted in the same call.
    async fn record_user_session(&self, session: UserSession) -> Result<()>;
    /// The user's sessions that are live at `now_secs`, newest first.
    async fn list_user_sessions(&self, user_id: &str, now_secs: i64) -> Result<Vec<UserSession>>;
    /// Revokes the user's live sessions (or only session `only`): each id
    /// goes to `revoked_sessions` until it would have expired. Returns how
    /// many were revoked; the audit entry is written when that is not 0.
    async fn revoke_user_sessions(
        &self,
        user_id: &str,
        only: Option<&str>,
        now_secs: i64,
        audit: NewAuditEntry,
    ) -> Result<u64>;
}
