//! Users, API tokens and user sessions ([`crate::TeamStore`]); each change
//! writes its audit entry in its own transaction (see [`crate::team`]).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension, Row, params};

use super::SqliteStore;
use super::audit::insert as audit;
use super::rows::{conflict_or_backend, ms, opt_time, time};
use crate::records::now;
use crate::{
    ApiToken, NewApiToken, NewAuditEntry, NewUser, Result, Role, StoreError, TeamStore, User,
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

const USER_COLUMNS: &str = "id, username, role, password_hash, created_at, updated_at";
const TOKEN_COLUMNS: &str =
    "id, name, user_id, role, token_hash, token_hint, created_at, last_used_at";
const SESSION_COLUMNS: &str = "id, user_id, created_at, expires_at, ip, user_agent";

fn role(row: &Row<'_>, idx: usize) -> rusqlite::Result<Role> {
    let text: String = row.get(idx)?;
    Role::parse(&text).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            idx,
            rusqlite::types::Type::Text,
            format!("unknown role {text:?}").into(),
        )
    })
}

fn user_row(row: &Row<'_>) -> rusqlite::Result<User> {
    Ok(User {
        id: row.get(0)?,
        username: row.get(1)?,
        role: role(row, 2)?,
        password_hash: row.get(3)?,
        created_at: time(row, 4)?,
        updated_at: time(row, 5)?,
    })
}

fn token_row(row: &Row<'_>) -> rusqlite::Result<ApiToken> {
    Ok(ApiToken {
        id: row.get(0)?,
        name: row.get(1)?,
        user_id: row.get(2)?,
        role: role(row, 3)?,
        token_hash: row.get(4)?,
        token_hint: row.get(5)?,
        created_at: time(row, 6)?,
        last_used_at: opt_time(row, 7)?,
    })
}

fn session_row(row: &Row<'_>) -> rusqlite::Result<UserSession> {
    Ok(UserSession {
        id: row.get(0)?,
        user_id: row.get(1)?,
        created_at: row.get(2)?,
        expires_at: row.get(3)?,
        ip: row.get(4)?,
        user_agent: row.get(5)?,
    })
}

fn get_user(conn: &Connection, id: &str) -> Result<Option<User>> {
    let sql = format!("SELECT {USER_COLUMNS} FROM users WHERE id = ?1");
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([id], user_row)
        .optional()?)
}

fn create_user(conn: &Connection, new: NewUser, entry: &NewAuditEntry) -> Result<User> {
    let at = now();
    conn.prepare_cached(
        "INSERT INTO users (id, username, role, password_hash, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
    )?
    .execute(params![
        new.id,
        new.username,
        new.role.as_str(),
        new.password_hash,
        ms(at)
    ])
    .map_err(|e| conflict_or_backend(e, format!("user {}", new.username)))?;
    audit(conn, entry)?;
    get_user(conn, &new.id)?.ok_or_else(|| StoreError::internal("user vanished"))
}

fn update_user(
    conn: &Connection,
    id: &str,
    patch: UserPatch,
    entry: &NewAuditEntry,
) -> Result<Option<User>> {
    let changed = conn
        .prepare_cached(
            "UPDATE users SET role = coalesce(?2, role),
                 password_hash = coalesce(?3, password_hash), updated_at = ?4
             WHERE id = ?1",
        )?
        .execute(params![
            id,
            patch.role.map(Role::as_str),
            patch.password_hash,
            ms(now())
        ])?;
    if changed == 0 {
        return Ok(None);
    }
    audit(conn, entry)?;
    get_user(conn, id)
}

/// Moves the user's live sessions (or one) to `revoked_sessions`.
fn revoke_sessions(conn: &Connection, user_id: &str, only: Option<&str>, now: i64) -> Result<u64> {
    conn.prepare_cached("DELETE FROM revoked_sessions WHERE expires_at <= ?1")?
        .execute([now])?;
    let moved = conn
        .prepare_cached(
            "INSERT INTO revoked_sessions (id, expires_at)
             SELECT id, expires_at FROM user_sessions
             WHERE user_id = ?1 AND (?2 IS NULL OR id = ?2) AND expires_at > ?3
             ON CONFLICT (id) DO UPDATE SET expires_at = max(expires_at, excluded.expires_at)",
        )?
        .execute(params![user_id, only, now])?;
    conn.prepare_cached(
        "DELETE FROM user_sessions WHERE user_id = ?1 AND (?2 IS NULL OR id = ?2)",
    )?
    .execute(params![user_id, only])?;
    Ok(moved as u64)
}

fn delete_user(conn: &Connection, id: &str, now: i64, entry: &NewAuditEntry) -> Result<bool> {
    let gone = conn
        .prepare_cached("DELETE FROM users WHERE id = ?1")?
        .execute([id])?;
    if gone == 0 {
        return Ok(false);
    }
    conn.prepare_cached("DELETE FROM api_tokens WHERE user_id = ?1")?
        .execute([id])?;
    revoke_sessions(conn, id, None, now)?;
    audit(conn, entry)?;
    Ok(true)
}

fn create_token(conn: &Connection, new: NewApiToken, entry: &NewAuditEntry) -> Result<ApiToken> {
    if let Some(user) = &new.user_id
        && get_user(conn, user)?.is_none()
    {
        return Err(StoreError::NotFound(format!("user {user}")));
    }
    conn.prepare_cached(
        "INSERT INTO api_tokens (id, name, user_id, role, token_hash, token_hint, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?
    .execute(params![
        new.id,
        new.name,
        new.user_id,
        new.role.as_str(),
        new.token_hash,
        new.token_hint,
        ms(now())
    ])
    .map_err(|e| conflict_or_backend(e, format!("token {}", new.id)))?;
    audit(conn, entry)?;
    token_where(conn, "id", &new.id)?.ok_or_else(|| StoreError::internal("token vanished"))
}

fn token_where(conn: &Connection, column: &str, value: &str) -> Result<Option<ApiToken>> {
    let sql = format!("SELECT {TOKEN_COLUMNS} FROM api_tokens WHERE {column} = ?1");
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([value], token_row)
        .optional()?)
}

fn all<T>(
    conn: &Connection,
    sql: &str,
    args: impl rusqlite::Params,
    row: fn(&Row<'_>) -> rusqlite::Result<T>,
) -> Result<Vec<T>> {
    let mut stmt = conn.prepare_cached(sql)?;
    let rows = stmt.query_map(args, row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

#[async_trait]
impl TeamStore for SqliteStore {
    async fn create_user(&self, new: NewUser, audit: NewAuditEntry) -> Result<User> {
        self.writer
            .run(1, move |c| create_user(c, new, &audit))
            .await
    }

    async fn list_users(&self) -> Result<Vec<User>> {
        let sql = format!("SELECT {USER_COLUMNS} FROM users ORDER BY username");
        self.readers.run(move |c| all(c, &sql, [], user_row)).await
    }

    async fn get_user(&self, id: &str) -> Result<Option<User>> {
        let id = id.to_owned();
        self.readers.run(move |c| get_user(c, &id)).await
    }

    async fn get_user_by_username(&self, username: &str) -> Result<Option<User>> {
        let name = username.to_owned();
        let sql = format!("SELECT {USER_COLUMNS} FROM users WHERE username = ?1");
        self.readers
            .run(move |c| {
                Ok(c.prepare_cached(&sql)?
                    .query_row([name], user_row)
                    .optional()?)
            })
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
            .run(1, move |c| update_user(c, &id, patch, &audit))
            .await
    }

    async fn delete_user(&self, id: &str, now_secs: i64, audit: NewAuditEntry) -> Result<bool> {
        let id = id.to_owned();
        self.writer
            .run(1, move |c| delete_user(c, &id, now_secs, &audit))
            .await
    }

    async fn create_api_token(&self, new: NewApiToken, audit: NewAuditEntry) -> Result<ApiToken> {
        self.writer
            .run(1, move |c| create_token(c, new, &audit))
            .await
    }

    async fn list_api_tokens(&self) -> Result<Vec<ApiToken>> {
        let sql = format!("SELECT {TOKEN_COLUMNS} FROM api_tokens ORDER BY created_at, id");
        self.readers.run(move |c| all(c, &sql, [], token_row)).await
    }

    async fn get_api_token(&self, id: &str) -> Result<Option<ApiToken>> {
        let id = id.to_owned();
        self.readers.run(move |c| token_where(c, "id", &id)).await
    }

    async fn get_api_token_by_hash(&self, hash: &str) -> Result<Option<ApiToken>> {
        let hash = hash.to_owned();
        self.readers
            .run(move |c| token_where(c, "token_hash", &hash))
            .await
    }

    async fn delete_api_token(&self, id: &str, audit: NewAuditEntry) -> Result<bool> {
        let id = id.to_owned();
        self.writer
            .run(1, move |c| {
                let gone = c
                    .prepare_cached("DELETE FROM api_tokens WHERE id = ?1")?
                    .execute([&id])?;
                if gone > 0 {
                    super::audit::insert(c, &audit)?;
                }
                Ok(gone > 0)
            })
            .await
    }

    async fn touch_api_token(&self, id: &str, at: DateTime<Utc>) -> Result<()> {
        let id = id.to_owned();
        self.writer
            .run(1, move |c| {
                c.prepare_cached("UPDATE api_tokens SET last_used_at = ?2 WHERE id = ?1")?
                    .execute(params![id, ms(at)])?;
                Ok(())
            })
            .await
    }

    async fn record_user_session(&self, s: UserSession) -> Result<()> {
        self.writer
            .run(1, move |c| {
                c.prepare_cached("DELETE FROM user_sessions WHERE expires_at <= ?1")?
                    .execute([s.created_at])?;
                c.prepare_cached(
                    "INSERT INTO user_sessions (id, user_id, created_at, expires_at, ip, user_agent)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )?
                .execute(params![
                    s.id,
                    s.user_id,
                    s.created_at,
                    s.expires_at,
                    s.ip,
                    s.user_agent
                ])
                .map_err(|e| conflict_or_backend(e, format!("session {}", s.id)))?;
                Ok(())
            })
            .await
    }

    async fn list_user_sessions(&self, user_id: &str, now_secs: i64) -> Result<Vec<UserSession>> {
        let user = user_id.to_owned();
        let sql = format!(
            "SELECT {SESSION_COLUMNS} FROM user_sessions WHERE user_id = ?1 AND expires_at > ?2
             ORDER BY created_at DESC, id"
        );
        self.readers
            .run(move |c| all(c, &sql, params![user, now_secs], session_row))
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
                let n = revoke_sessions(c, &user, only.as_deref(), now_secs)?;
                if n > 0 {
                    super::audit::insert(c, &audit)?;
                }
                Ok(n)
            })
            .await
    }
}
