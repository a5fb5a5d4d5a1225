//! Users, API tokens and user sessions (see [`crate::team`]). Each change
//! writes its audit entry in its own transaction, only when something
//! changed.

mod password;

pub(crate) use password::change_password;

use chrono::{DateTime, Utc};

use super::audit;
use crate::sql::{Conn, Db, Row, Tx, args, conflict};
use crate::{
    ApiToken, NewApiToken, NewAuditEntry, NewUser, Result, Role, StoreError, User, UserPatch,
    UserSession,
};

const USER_COLUMNS: &str = "id, username, role, password_hash, created_at, updated_at";
const TOKEN_COLUMNS: &str =
    "id, name, user_id, role, token_hash, token_hint, created_at, last_used_at";
const SESSION_COLUMNS: &str = "id, user_id, created_at, expires_at, ip, user_agent";

fn role(row: &Row, idx: usize) -> Result<Role> {
    let text: String = row.get(idx)?;
    Role::parse(&text).ok_or_else(|| StoreError::corrupt(format!("unknown role {text:?}")))
}

fn user(mut row: Row) -> Result<User> {
    Ok(User {
        role: role(&row, 2)?,
        id: row.take(0)?,
        username: row.take(1)?,
        password_hash: row.take(3)?,
        created_at: row.get(4)?,
        updated_at: row.get(5)?,
    })
}

fn token(mut row: Row) -> Result<ApiToken> {
    Ok(ApiToken {
        role: role(&row, 3)?,
        id: row.take(0)?,
        name: row.take(1)?,
        user_id: row.take(2)?,
        token_hash: row.take(4)?,
        token_hint: row.take(5)?,
        created_at: row.get(6)?,
        last_used_at: row.get(7)?,
    })
}

fn session(mut row: Row) -> Result<UserSession> {
    Ok(UserSession {
        id: row.take(0)?,
        user_id: row.take(1)?,
        created_at: row.get(2)?,
        expires_at: row.get(3)?,
        ip: row.take(4)?,
        user_agent: row.take(5)?,
    })
}

/// One user by `column` (`id` or `username`).
pub(crate) async fn user_by(db: &impl Db, column: &str, value: &str) -> Result<Option<User>> {
    let sql = format!("SELECT {USER_COLUMNS} FROM users WHERE {column} = $1");
    db.query_opt(&sql, args![value])
        .await?
        .map(user)
        .transpose()
}

/// Every user, by username.
pub(crate) async fn list_users(db: &impl Db) -> Result<Vec<User>> {
    let sql = format!("SELECT {USER_COLUMNS} FROM users ORDER BY username");
    db.query_map(&sql, args![], user).await
}

pub(crate) async fn create_user(
    conn: &mut impl Conn,
    new: &NewUser,
    entry: &NewAuditEntry,
    now: DateTime<Utc>,
) -> Result<User> {
    let tx = conn.begin().await?;
    tx.execute(
        "INSERT INTO users (id, username, role, password_hash, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $5)",
        args![
            &new.id,
            &new.username,
            new.role.as_str(),
            &new.password_hash,
            now
        ],
    )
    .await
    .map_err(conflict(format!("user {}", new.username)))?;
    audit::insert(&tx, entry).await?;
    let user = user_by(&tx, "id", &new.id)
        .await?
        .ok_or_else(|| StoreError::internal("user vanished"))?;
    tx.commit().await?;
    Ok(user)
}

/// `None` (and nothing audited) when there is no such user.
pub(crate) async fn update_user(
    conn: &mut impl Conn,
    id: &str,
    patch: &UserPatch,
    entry: &NewAuditEntry,
    now: DateTime<Utc>,
) -> Result<Option<User>> {
    let tx = conn.begin().await?;
    let changed = tx
        .execute(
            "UPDATE users SET role = coalesce($2, role),
                 password_hash = coalesce($3, password_hash), updated_at = $4
             WHERE id = $1",
            args![id, patch.role.map(Role::as_str), &patch.password_hash, now],
        )
        .await?;
    if changed == 0 {
        return Ok(None);
    }
    audit::insert(&tx, entry).await?;
    let user = user_by(&tx, "id", id).await?;
    tx.commit().await?;
    Ok(user)
}

/// Deletes the user with their tokens and revokes their sessions.
pub(crate) async fn delete_user(
    conn: &mut impl Conn,
    id: &str,
    now_secs: i64,
    entry: &NewAuditEntry,
) -> Result<bool> {
    let tx = conn.begin().await?;
    if tx
        .execute("DELETE FROM users WHERE id = $1", args![id])
        .await?
        == 0
    {
        return Ok(false);
    }
    tx.execute("DELETE FROM api_tokens WHERE user_id = $1", args![id])
        .await?;
    revoke(&tx, id, Sessions::All, now_secs).await?;
    audit::insert(&tx, entry).await?;
    tx.commit().await?;
    Ok(true)
}

/// One token by `column` (`id` or `token_hash`).
pub(crate) async fn token_by(db: &impl Db, column: &str, value: &str) -> Result<Option<ApiToken>> {
    let sql = format!("SELECT {TOKEN_COLUMNS} FROM api_tokens WHERE {column} = $1");
    db.query_opt(&sql, args![value])
        .await?
        .map(token)
        .transpose()
}

/// Every token, oldest first.
pub(crate) async fn list_tokens(db: &impl Db) -> Result<Vec<ApiToken>> {
    let sql = format!("SELECT {TOKEN_COLUMNS} FROM api_tokens ORDER BY created_at, id");
    db.query_map(&sql, args![], token).await
}

/// `NotFound` when the token's user does not exist.
pub(crate) async fn create_token(
    conn: &mut impl Conn,
    new: &NewApiToken,
    entry: &NewAuditEntry,
    now: DateTime<Utc>,
) -> Result<ApiToken> {
    let tx = conn.begin().await?;
    if let Some(user) = &new.user_id {
        // Locks the user row: a concurrent delete cannot orphan the token.
        let lock = tx.dialect().for_share();
        let sql = format!("SELECT id FROM users WHERE id = $1{lock}");
        if !tx.exists(&sql, args![user]).await? {
            return Err(StoreError::NotFound(format!("user {user}")));
        }
    }
    tx.execute(
        "INSERT INTO api_tokens (id, name, user_id, role, token_hash, token_hint, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
        args![
            &new.id,
            &new.name,
            &new.user_id,
            new.role.as_str(),
            &new.token_hash,
            &new.token_hint,
            now
        ],
    )
    .await
    .map_err(conflict(format!("token {}", new.id)))?;
    audit::insert(&tx, entry).await?;
    let token = token_by(&tx, "id", &new.id)
        .await?
        .ok_or_else(|| StoreError::internal("token vanished"))?;
    tx.commit().await?;
    Ok(token)
}

pub(crate) async fn delete_token(
    conn: &mut impl Conn,
    id: &str,
    entry: &NewAuditEntry,
) -> Result<bool> {
    let tx = conn.begin().await?;
    if tx
        .execute("DELETE FROM api_tokens WHERE id = $1", args![id])
        .await?
        == 0
    {
        return Ok(false);
    }
    audit::insert(&tx, entry).await?;
    tx.commit().await?;
    Ok(true)
}

pub(crate) async fn touch_token(db: &impl Db, id: &str, at: DateTime<Utc>) -> Result<()> {
    db.execute(
        "UPDATE api_tokens SET last_used_at = $2 WHERE id = $1",
        args![id, at],
    )
    .await?;
    Ok(())
}

/// Records a session, deleting those expired before it began.
pub(crate) async fn record_session(db: &impl Db, s: &UserSession) -> Result<()> {
    db.execute(
        "DELETE FROM user_sessions WHERE expires_at <= $1",
        args![s.created_at],
    )
    .await?;
    db.execute(
        "INSERT INTO user_sessions (id, user_id, created_at, expires_at, ip, user_agent)
         VALUES ($1, $2, $3, $4, $5, $6)",
        args![
            &s.id,
            &s.user_id,
            s.created_at,
            s.expires_at,
            &s.ip,
            &s.user_agent
        ],
    )
    .await
    .map_err(conflict(format!("session {}", s.id)))?;
    Ok(())
}

/// The user's sessions live at `now_secs`, newest first.
pub(crate) async fn list_sessions(
    db: &impl Db,
    user_id: &str,
    now_secs: i64,
) -> Result<Vec<UserSession>> {
    let sql = format!(
        "SELECT {SESSION_COLUMNS} FROM user_sessions WHERE user_id = $1 AND expires_at > $2
         ORDER BY created_at DESC, id"
    );
    db.query_map(&sql, args![user_id, now_secs], session).await
}

/// Revokes the user's live sessions (or only `only`), auditing when any was.
pub(crate) async fn revoke_sessions(
    conn: &mut impl Conn,
    user_id: &str,
    only: Option<&str>,
    now_secs: i64,
    entry: &NewAuditEntry,
) -> Result<u64> {
    let tx = conn.begin().await?;
    let which = match only {
        Some(id) => Sessions::Only(id),
        None => Sessions::All,
    };
    let n = revoke(&tx, user_id, which, now_secs).await?;
    if n > 0 {
        audit::insert(&tx, entry).await?;
    }
    tx.commit().await?;
    Ok(n)
}

/// Which of a user's sessions to revoke.
#[derive(Debug, Clone, Copy)]
enum Sessions<'a> {
    All,
    Only(&'a str),
    AllBut(&'a str),
}

/// Moves the user's live sessions (all, one, or all but one) to
/// `revoked_sessions`.
async fn revoke(db: &impl Db, user_id: &str, which: Sessions<'_>, now: i64) -> Result<u64> {
    let (only, except) = match which {
        Sessions::All => (None, None),
        Sessions::Only(id) => (Some(id), None),
        Sessions::AllBut(id) => (None, Some(id)),
    };
    db.execute(
        "DELETE FROM revoked_sessions WHERE expires_at <= $1",
        args![now],
    )
    .await?;
    let greatest = db.dialect().greatest();
    let moved = db
        .execute(
            &format!(
                "INSERT INTO revoked_sessions (id, expires_at)
                 SELECT id, expires_at FROM user_sessions
                 WHERE user_id = $1 AND (CAST($2 AS text) IS NULL OR id = $2)
                   AND (CAST($4 AS text) IS NULL OR id <> $4) AND expires_at > $3
                 ON CONFLICT (id) DO UPDATE
                 SET expires_at = {greatest}(revoked_sessions.expires_at, excluded.expires_at)"
            ),
            args![user_id, only, now, except],
        )
        .await?;
    db.execute(
        "DELETE FROM user_sessions WHERE user_id = $1 AND (CAST($2 AS text) IS NULL OR id = $2)
           AND (CAST($3 AS text) IS NULL OR id <> $3)",
        args![user_id, only, except],
    )
    .await?;
    Ok(moved)
}
