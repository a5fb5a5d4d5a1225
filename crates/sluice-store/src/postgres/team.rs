//! Users, API tokens and user sessions ([`crate::TeamStore`]); each change
//! writes its audit entry in its own transaction (see [`crate::team`]).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use deadpool_postgres::GenericClient;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

use super::PostgresStore;
use super::audit::insert as audit;
use super::rows::{backend, conflict_or_backend, get, ms, opt_time, time};
use crate::records::now;
use crate::{
    ApiToken, NewApiToken, NewAuditEntry, NewUser, Result, Role, StoreError, TeamStore, User,
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

const USER_COLUMNS: &str = "id, username, role, password_hash, created_at, updated_at";
const TOKEN_COLUMNS: &str =
    "id, name, user_id, role, token_hash, token_hint, created_at, last_used_at";
const SESSION_COLUMNS: &str = "id, user_id, created_at, expires_at, ip, user_agent";

fn role(row: &Row, idx: usize) -> Result<Role> {
    let text: String = get(row, idx)?;
    Role::parse(&text).ok_or_else(|| StoreError::corrupt(format!("unknown role {text:?}")))
}

fn user_row(row: &Row) -> Result<User> {
    Ok(User {
        id: get(row, 0)?,
        username: get(row, 1)?,
        role: role(row, 2)?,
        password_hash: get(row, 3)?,
        created_at: time(row, 4)?,
        updated_at: time(row, 5)?,
    })
}

fn token_row(row: &Row) -> Result<ApiToken> {
    Ok(ApiToken {
        id: get(row, 0)?,
        name: get(row, 1)?,
        user_id: get(row, 2)?,
        role: role(row, 3)?,
        token_hash: get(row, 4)?,
        token_hint: get(row, 5)?,
        created_at: time(row, 6)?,
        last_used_at: opt_time(row, 7)?,
    })
}

fn session_row(row: &Row) -> Result<UserSession> {
    Ok(UserSession {
        id: get(row, 0)?,
        user_id: get(row, 1)?,
        created_at: get(row, 2)?,
        expires_at: get(row, 3)?,
        ip: get(row, 4)?,
        user_agent: get(row, 5)?,
    })
}

async fn rows<T>(
    client: &impl GenericClient,
    sql: &str,
    args: &[&(dyn ToSql + Sync)],
    row: fn(&Row) -> Result<T>,
) -> Result<Vec<T>> {
    let stmt = client.prepare_cached(sql).await.map_err(backend)?;
    let found = client.query(&stmt, args).await.map_err(backend)?;
    found.iter().map(row).collect()
}

async fn execute(
    client: &impl GenericClient,
    sql: &str,
    args: &[&(dyn ToSql + Sync)],
) -> Result<u64> {
    let stmt = client.prepare_cached(sql).await.map_err(backend)?;
    client.execute(&stmt, args).await.map_err(backend)
}

async fn first<T>(
    client: &impl GenericClient,
    sql: &str,
    args: &[&(dyn ToSql + Sync)],
    row: fn(&Row) -> Result<T>,
) -> Result<Option<T>> {
    Ok(rows(client, sql, args, row).await?.into_iter().next())
}

async fn user_by(client: &impl GenericClient, column: &str, value: &str) -> Result<Option<User>> {
    let sql = format!("SELECT {USER_COLUMNS} FROM users WHERE {column} = $1");
    first(client, &sql, &[&value], user_row).await
}

async fn token_by(
    client: &impl GenericClient,
    column: &str,
    value: &str,
) -> Result<Option<ApiToken>> {
    let sql = format!("SELECT {TOKEN_COLUMNS} FROM api_tokens WHERE {column} = $1");
    first(client, &sql, &[&value], token_row).await
}

/// Moves the user's live sessions (or one) to `revoked_sessions`.
async fn revoke_sessions(
    client: &impl GenericClient,
    user_id: &str,
    only: Option<&str>,
    now: i64,
) -> Result<u64> {
    execute(
        client,
        "DELETE FROM revoked_sessions WHERE expires_at <= $1",
        &[&now],
    )
    .await?;
    let moved = execute(
        client,
        "INSERT INTO revoked_sessions (id, expires_at)
         SELECT id, expires_at FROM user_sessions
         WHERE user_id = $1 AND ($2::text IS NULL OR id = $2) AND expires_at > $3
         ON CONFLICT (id) DO UPDATE
         SET expires_at = GREATEST(revoked_sessions.expires_at, EXCLUDED.expires_at)",
        &[&user_id, &only, &now],
    )
    .await?;
    execute(
        client,
        "DELETE FROM user_sessions WHERE user_id = $1 AND ($2::text IS NULL OR id = $2)",
        &[&user_id, &only],
    )
    .await?;
    Ok(moved)
}

#[async_trait]
impl TeamStore for PostgresStore {
    async fn create_user(&self, new: NewUser, entry: NewAuditEntry) -> Result<User> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(backend)?;
        let at = ms(now());
        let stmt = tx
            .prepare_cached(
                "INSERT INTO users (id, username, role, password_hash, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $5)",
            )
            .await
            .map_err(backend)?;
        tx.execute(
            &stmt,
            &[
                &new.id,
                &new.username,
                &new.role.as_str(),
                &new.password_hash,
                &at,
            ],
        )
        .await
        .map_err(|e| conflict_or_backend(e, format!("user {}", new.username)))?;
        audit(&tx, &entry).await?;
        let user = user_by(&tx, "id", &new.id)
            .await?
            .ok_or_else(|| StoreError::internal("user vanished"))?;
        tx.commit().await.map_err(backend)?;
        Ok(user)
    }

    async fn list_users(&self) -> Result<Vec<User>> {
        let sql = format!("SELECT {USER_COLUMNS} FROM users ORDER BY username");
        rows(&self.client().await?, &sql, &[], user_row).await
    }

    async fn get_user(&self, id: &str) -> Result<Option<User>> {
        user_by(&self.client().await?, "id", id).await
    }

    async fn get_user_by_username(&self, username: &str) -> Result<Option<User>> {
        user_by(&self.client().await?, "username", username).await
    }

    async fn update_user(
        &self,
        id: &str,
        patch: UserPatch,
        entry: NewAuditEntry,
    ) -> Result<Option<User>> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(backend)?;
        let changed = execute(
            &tx,
            "UPDATE users SET role = coalesce($2, role),
                 password_hash = coalesce($3, password_hash), updated_at = $4
             WHERE id = $1",
            &[
                &id,
                &patch.role.map(Role::as_str),
                &patch.password_hash,
                &ms(now()),
            ],
        )
        .await?;
        if changed == 0 {
            return Ok(None);
        }
        audit(&tx, &entry).await?;
        let user = user_by(&tx, "id", id).await?;
        tx.commit().await.map_err(backend)?;
        Ok(user)
    }

    async fn delete_user(&self, id: &str, now_secs: i64, entry: NewAuditEntry) -> Result<bool> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(backend)?;
        if execute(&tx, "DELETE FROM users WHERE id = $1", &[&id]).await? == 0 {
            return Ok(false);
        }
        execute(&tx, "DELETE FROM api_tokens WHERE user_id = $1", &[&id]).await?;
        revoke_sessions(&tx, id, None, now_secs).await?;
        audit(&tx, &entry).await?;
        tx.commit().await.map_err(backend)?;
        Ok(true)
    }

    async fn create_api_token(&self, new: NewApiToken, entry: NewAuditEntry) -> Result<ApiToken> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(backend)?;
        if let Some(user) = &new.user_id {
            // Locks the user row: a concurrent delete cannot orphan the token.
            let sql = "SELECT id FROM users WHERE id = $1 FOR SHARE";
            if first(&tx, sql, &[user], |r| get::<String>(r, 0))
                .await?
                .is_none()
            {
                return Err(StoreError::NotFound(format!("user {user}")));
            }
        }
        let stmt = tx
            .prepare_cached(
                "INSERT INTO api_tokens (id, name, user_id, role, token_hash, token_hint, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .await
            .map_err(backend)?;
        tx.execute(
            &stmt,
            &[
                &new.id,
                &new.name,
                &new.user_id,
                &new.role.as_str(),
                &new.token_hash,
                &new.token_hint,
                &ms(now()),
            ],
        )
        .await
        .map_err(|e| conflict_or_backend(e, format!("token {}", new.id)))?;
        audit(&tx, &entry).await?;
        let token = token_by(&tx, "id", &new.id)
            .await?
            .ok_or_else(|| StoreError::internal("token vanished"))?;
        tx.commit().await.map_err(backend)?;
        Ok(token)
    }

    async fn list_api_tokens(&self) -> Result<Vec<ApiToken>> {
        let sql = format!("SELECT {TOKEN_COLUMNS} FROM api_tokens ORDER BY created_at, id");
        rows(&self.client().await?, &sql, &[], token_row).await
    }

    async fn get_api_token(&self, id: &str) -> Result<Option<ApiToken>> {
        token_by(&self.client().await?, "id", id).await
    }

    async fn get_api_token_by_hash(&self, hash: &str) -> Result<Option<ApiToken>> {
        token_by(&self.client().await?, "token_hash", hash).await
    }

    async fn delete_api_token(&self, id: &str, entry: NewAuditEntry) -> Result<bool> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(backend)?;
        if execute(&tx, "DELETE FROM api_tokens WHERE id = $1", &[&id]).await? == 0 {
            return Ok(false);
        }
        audit(&tx, &entry).await?;
        tx.commit().await.map_err(backend)?;
        Ok(true)
    }

    async fn touch_api_token(&self, id: &str, at: DateTime<Utc>) -> Result<()> {
        let sql = "UPDATE api_tokens SET last_used_at = $2 WHERE id = $1";
        execute(&self.client().await?, sql, &[&id, &ms(at)]).await?;
        Ok(())
    }

    async fn record_user_session(&self, s: UserSession) -> Result<()> {
        let client = self.client().await?;
        execute(
            &client,
            "DELETE FROM user_sessions WHERE expires_at <= $1",
            &[&s.created_at],
        )
        .await?;
        let stmt = client
            .prepare_cached(
                "INSERT INTO user_sessions (id, user_id, created_at, expires_at, ip, user_agent)
                 VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .await
            .map_err(backend)?;
        client
            .execute(
                &stmt,
                &[
                    &s.id,
                    &s.user_id,
                    &s.created_at,
                    &s.expires_at,
                    &s.ip,
                    &s.user_agent,
                ],
            )
            .await
            .map_err(|e| conflict_or_backend(e, format!("session {}", s.id)))?;
        Ok(())
    }

    async fn list_user_sessions(&self, user_id: &str, now_secs: i64) -> Result<Vec<UserSession>> {
        let sql = format!(
            "SELECT {SESSION_COLUMNS} FROM user_sessions WHERE user_id = $1 AND expires_at > $2
             ORDER BY created_at DESC, id"
        );
        rows(
            &self.client().await?,
            &sql,
            &[&user_id, &now_secs],
            session_row,
        )
        .await
    }

    async fn revoke_user_sessions(
        &self,
        user_id: &str,
        only: Option<&str>,
        now_secs: i64,
        entry: NewAuditEntry,
    ) -> Result<u64> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(backend)?;
        let n = revoke_sessions(&tx, user_id, only, now_secs).await?;
        if n > 0 {
            audit(&tx, &entry).await?;
        }
        tx.commit().await.map_err(backend)?;
        Ok(n)
    }
}
