//! Users, API tokens and user sessions ([`crate::TeamStore`]): the work is
//! `crate::queries::team`, run by the writer (changes) or a reader.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::SqliteStore;
use crate::queries::team;
use crate::records::now;
use crate::sql::sqlite::{Lite, ready};
use crate::{
    ApiToken, NewApiToken, NewAuditEntry, NewUser, PasswordChange, Result, TeamStore, User,
    UserPatch, UserSession,
};

/// Users, API tokens, user sessions and the audit log.
pub(super) const SCHEMA: &str = "
CREATE TABLE users (
    id            TEXT PRIMARY KEY,
    username      TEXT NOT NULL UNIQUE,
    role          TEXT NOT NULL,
    password_hash TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
);
CREATE TABLE api_tokens (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL,
    user_id      TEXT,
    role         TEXT NOT NULL,
    token_hash   TEXT NOT NULL UNIQUE,
    token_hint   TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER
);
CREATE INDEX api_tokens_by_user ON api_tokens (user_id);
CREATE TABLE user_sessions (
    id         TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    ip         TEXT,
    user_agent TEXT
) WITHOUT ROWID;
CREATE INDEX user_sessions_by_user ON user_sessions (user_id);
CREATE TABLE audit_log (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    at          INTEGER NOT NULL,
    actor_kind  TEXT NOT NULL,
    actor_id    TEXT,
    actor_name  TEXT NOT NULL,
    via         TEXT NOT NULL,
    ip          TEXT,
    user_agent  TEXT,
    resource    TEXT NOT NULL,
    resource_id TEXT,
    action      TEXT NOT NULL,
    before      TEXT,
    after       TEXT,
    confirmed   INTEGER NOT NULL
);
CREATE INDEX audit_log_at ON audit_log (at);
";

#[async_trait]
impl TeamStore for SqliteStore {
    async fn create_user(&self, new: NewUser, audit: NewAuditEntry) -> Result<User> {
        self.writer
            .run(1, move |c| {
                ready(team::create_user(&mut Lite(c), &new, &audit, now()))
            })
            .await
    }

    async fn list_users(&self) -> Result<Vec<User>> {
        self.readers
            .run(|c| ready(team::list_users(&Lite(c))))
            .await
    }

    async fn get_user(&self, id: &str) -> Result<Option<User>> {
        let id = id.to_owned();
        self.readers
            .run(move |c| ready(team::user_by(&Lite(c), "id", &id)))
            .await
    }

    async fn get_user_by_username(&self, username: &str) -> Result<Option<User>> {
        let name = username.to_owned();
        self.readers
            .run(move |c| ready(team::user_by(&Lite(c), "username", &name)))
            .await
    }

    async fn update_user(
        &self,
        id: &str,
        patch: UserPatch,
        audit: NewAuditEntry,
    ) -> Result<Option<User>> {
        let id = id.to_owned();
        self.writer
            .run(1, move |c| {
                ready(team::update_user(&mut Lite(c), &id, &patch, &audit, now()))
            })
            .await
    }

    async fn change_password(
        &self,
        change: PasswordChange,
        audit: NewAuditEntry,
    ) -> Result<Option<(User, u64)>> {
        self.writer
            .run(1, move |c| {
                ready(team::change_password(&mut Lite(c), &change, &audit))
            })
            .await
    }

    async fn delete_user(&self, id: &str, now_secs: i64, audit: NewAuditEntry) -> Result<bool> {
        let id = id.to_owned();
        self.writer
            .run(1, move |c| {
                ready(team::delete_user(&mut Lite(c), &id, now_secs, &audit))
            })
            .await
    }

    async fn create_api_token(&self, new: NewApiToken, audit: NewAuditEntry) -> Result<ApiToken> {
        self.writer
            .run(1, move |c| {
                ready(team::create_token(&mut Lite(c), &new, &audit, now()))
            })
            .await
    }

    async fn list_api_tokens(&self) -> Result<Vec<ApiToken>> {
        self.readers
            .run(|c| ready(team::list_tokens(&Lite(c))))
            .await
    }

    async fn get_api_token(&self, id: &str) -> Result<Option<ApiToken>> {
        let id = id.to_owned();
        self.readers
            .run(move |c| ready(team::token_by(&Lite(c), "id", &id)))
            .await
    }

    async fn get_api_token_by_hash(&self, hash: &str) -> Result<Option<ApiToken>> {
        let hash = hash.to_owned();
        self.readers
            .run(move |c| ready(team::token_by(&Lite(c), "token_hash", &hash)))
            .await
    }

    async fn delete_api_token(&self, id: &str, audit: NewAuditEntry) -> Result<bool> {
        let id = id.to_owned();
        self.writer
            .run(1, move |c| {
                ready(team::delete_token(&mut Lite(c), &id, &audit))
            })
            .await
    }

    async fn touch_api_token(&self, id: &str, at: DateTime<Utc>) -> Result<()> {
        let id = id.to_owned();
        self.writer
            .run(1, move |c| ready(team::touch_token(&Lite(c), &id, at)))
            .await
    }

    async fn record_user_session(&self, session: UserSession) -> Result<()> {
        self.writer
            .run(1, move |c| ready(team::record_session(&Lite(c), &session)))
            .await
    }

    async fn list_user_sessions(&self, user_id: &str, now_secs: i64) -> Result<Vec<UserSession>> {
        let user = user_id.to_owned();
        self.readers
            .run(move |c| ready(team::list_sessions(&Lite(c), &user, now_secs)))
            .await
    }

    async fn revoke_user_sessions(
        &self,
        user_id: &str,
        only: Option<&str>,
        now_secs: i64,
        audit: NewAuditEntry,
    ) -> Result<u64> {
        let (user, only) = (user_id.to_owned(), only.map(str::to_owned));
        self.writer
            .run(1, move |c| {
                ready(team::revoke_sessions(
                    &mut Lite(c),
                    &user,
                    only.as_deref(),
                    now_secs,
                    &audit,
                ))
            })
            .await
    }
}
