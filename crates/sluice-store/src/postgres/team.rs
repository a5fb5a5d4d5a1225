//! Users, API tokens and user sessions ([`crate::TeamStore`]): the work is
//! `crate::queries::team`, on a pooled connection.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::PostgresStore;
use crate::queries::team;
use crate::records::now;
use crate::{
    ApiToken, NewApiToken, NewAuditEntry, NewUser, PasswordChange, Result, TeamStore, User,
    UserPatch, UserSession,
};

/// Users, API tokens, user sessions and the audit log.
pub(super) const SCHEMA: &str = r#"
CREATE TABLE users (
    id            text COLLATE "C" PRIMARY KEY,
    username      text COLLATE "C" NOT NULL UNIQUE,
    role          text NOT NULL,
    password_hash text NOT NULL,
    created_at    bigint NOT NULL,
    updated_at    bigint NOT NULL
);
CREATE TABLE api_tokens (
    id           text COLLATE "C" PRIMARY KEY,
    name         text NOT NULL,
    user_id      text COLLATE "C",
    role         text NOT NULL,
    token_hash   text COLLATE "C" NOT NULL UNIQUE,
    token_hint   text NOT NULL,
    created_at   bigint NOT NULL,
    last_used_at bigint
);
CREATE INDEX api_tokens_by_user ON api_tokens (user_id);
CREATE TABLE user_sessions (
    id         text COLLATE "C" PRIMARY KEY,
    user_id    text COLLATE "C" NOT NULL,
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL,
    ip         text,
    user_agent text
);
CREATE INDEX user_sessions_by_user ON user_sessions (user_id);
CREATE TABLE audit_log (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          bigint NOT NULL,
    actor_kind  text NOT NULL,
    actor_id    text,
    actor_name  text NOT NULL,
    via         text NOT NULL,
    ip          text,
    user_agent  text,
    resource    text NOT NULL,
    resource_id text,
    action      text NOT NULL,
    before      text,
    after       text,
    confirmed   boolean NOT NULL
);
CREATE INDEX audit_log_at ON audit_log (at);
"#;

#[async_trait]
impl TeamStore for PostgresStore {
    async fn create_user(&self, new: NewUser, audit: NewAuditEntry) -> Result<User> {
        team::create_user(&mut self.db().await?, &new, &audit, now()).await
    }

    async fn list_users(&self) -> Result<Vec<User>> {
        team::list_users(&self.db().await?).await
    }

    async fn get_user(&self, id: &str) -> Result<Option<User>> {
        team::user_by(&self.db().await?, "id", id).await
    }

    async fn get_user_by_username(&self, username: &str) -> Result<Option<User>> {
        team::user_by(&self.db().await?, "username", username).await
    }

    async fn update_user(
        &self,
        id: &str,
        patch: UserPatch,
        audit: NewAuditEntry,
    ) -> Result<Option<User>> {
        team::update_user(&mut self.db().await?, id, &patch, &audit, now()).await
    }

    async fn change_password(
        &self,
        change: PasswordChange,
        audit: NewAuditEntry,
    ) -> Result<Option<(User, u64)>> {
        team::change_password(&mut self.db().await?, &change, &audit).await
    }

    async fn delete_user(&self, id: &str, now_secs: i64, audit: NewAuditEntry) -> Result<bool> {
        team::delete_user(&mut self.db().await?, id, now_secs, &audit).await
    }

    async fn create_api_token(&self, new: NewApiToken, audit: NewAuditEntry) -> Result<ApiToken> {
        team::create_token(&mut self.db().await?, &new, &audit, now()).await
    }

    async fn list_api_tokens(&self) -> Result<Vec<ApiToken>> {
        team::list_tokens(&self.db().await?).await
    }

    async fn get_api_token(&self, id: &str) -> Result<Option<ApiToken>> {
        team::token_by(&self.db().await?, "id", id).await
    }

    async fn get_api_token_by_hash(&self, hash: &str) -> Result<Option<ApiToken>> {
        team::token_by(&self.db().await?, "token_hash", hash).await
    }

    async fn delete_api_token(&self, id: &str, audit: NewAuditEntry) -> Result<bool> {
        team::delete_token(&mut self.db().await?, id, &audit).await
    }

    async fn touch_api_token(&self, id: &str, at: DateTime<Utc>) -> Result<()> {
        team::touch_token(&self.db().await?, id, at).await
    }

    async fn record_user_session(&self, session: UserSession) -> Result<()> {
        team::record_session(&self.db().await?, &session).await
    }

    async fn list_user_sessions(&self, user_id: &str, now_secs: i64) -> Result<Vec<UserSession>> {
        team::list_sessions(&self.db().await?, user_id, now_secs).await
    }

    async fn revoke_user_sessions(
        &self,
        user_id: &str,
        only: Option<&str>,
        now_secs: i64,
        audit: NewAuditEntry,
    ) -> Result<u64> {
        team::revoke_sessions(&mut self.db().await?, user_id, only, now_secs, &audit).await
    }
}
