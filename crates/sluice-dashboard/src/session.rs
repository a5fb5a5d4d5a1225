//! Sessions and CSRF tokens.
//!
//! A session is a signed cookie, `sid.expires.mac`, so that every node
//! sharing a database accepts it and a restart does not sign anyone out.
//! The MAC key is derived from a random key kept in the store's meta table
//! (created once, shared by all nodes) *and* the admin token's hash: changing
//! the admin token invalidates every session. Sign-out records the session
//! id in the store (`revoked_sessions`, kept until the cookie would have
//! expired) and clears the cookie: a signed-out or stolen cookie stays
//! refused across restarts and deploys, and on every node sharing the
//! database. Every signed-in request asks the store (one primary-key read);
//! ids known to be revoked are also remembered in memory, which is always
//! correct because a revocation is never lifted.
//!
//! A user's session names the user in its cookie, `sid.uid.expires.mac`,
//! and is recorded in the store (`user_sessions`) so that it can be listed
//! and signed out per user ([`sluice_store::TeamStore`]); the user is read
//! on every request, so a changed role applies at once and a deleted user
//! is signed out. A session of the admin token keeps the shorter cookie.
//!
//! The CSRF token of a session is a MAC of its id: nothing to store, and it
//! cannot be computed without the key. Every state-changing form carries it;
//! the sign-in form, which precedes any session, uses a double-submit cookie.
//!
//! Cookies are `HttpOnly`, `SameSite=Strict`, `Path=/`, and `Secure` when
//! the request arrived over HTTPS (a trusted proxy saying
//! `X-Forwarded-Proto: https`).

use std::collections::HashMap;
use std::sync::Mutex;

use axum::http::HeaderMap;
use axum::http::header::COOKIE;
use chrono::Utc;
use hmac::{Hmac, Mac};
use rand::Rng;
use rand::distr::Alphanumeric;
use sha2::Sha256;
use sluice_api::AppState;
use sluice_api::audit::{self, Target};
use sluice_api::principal::{Actor, Principal, Via};
use sluice_store::{Store, User, UserSession};
use subtle::ConstantTimeEq;
use tokio::sync::OnceCell;

type HmacSha256 = Hmac<Sha256>;

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "sluice_session";
/// The sign-in form's double-submit cookie.
pub const SIGNIN_COOKIE: &str = "sluice_signin";
/// How long a session lasts after sign-in.
pub const SESSION_SECS: i64 = 12 * 3600;
const META_KEY: &str = "dashboard_session_key";

/// A signed-in session, as verified from its cookie.
#[derive(Debug, Clone)]
pub struct Session {
    pub id: String,
    pub expires: i64,
    /// The token every state-changing form of this session must carry.
    pub csrf: String,
    /// Who is signed in: the admin token or a user.
    pub principal: Principal,
    /// The principal as the audit log records it, with the request's
    /// address and user agent (filled in by [`crate::layout::SignedIn`]).
    pub actor: Actor,
}

impl Session {
    /// A session of `principal` (its actor without an address yet).
    pub fn new(id: &str, expires: i64, csrf: String, principal: Principal) -> Session {
        Session {
            id: id.to_owned(),
            expires,
            csrf,
            actor: Actor {
                principal: principal.clone(),
                via: Via::Dashboard,
                ip: None,
                user_agent: None,
            },
            principal,
        }
    }

    pub fn role(&self) -> sluice_store::Role {
        self.principal.role()
    }

    /// The signed-in user's id; `None` for the admin token.
    pub fn user_id(&self) -> Option<&str> {
        match &self.principal {
            Principal::User { id, .. } => Some(id),
            _ => None,
        }
    }
}

/// Issues and verifies session cookies.
pub struct Sessions {
    admin_token_hash: String,
    key: OnceCell<Vec<u8>>,
    /// Session ids known to be signed out and when they would have expired:
    /// a cache of the store's revocations (only ever positive answers).
    revoked: Mutex<HashMap<String, i64>>,
}

pub fn random(n: usize) -> String {
    rand::rng()
        .sample_iter(&Alphanumeric)
        .take(n)
        .map(char::from)
        .collect()
}

impl Sessions {
    pub fn new(admin_token_hash: String) -> Self {
        Sessions {
            admin_token_hash,
            key: OnceCell::new(),
            revoked: Mutex::new(HashMap::new()),
        }
    }

    /// The MAC key: the stored random key bound to the admin token hash.
    async fn key(&self, store: &dyn Store) -> Result<&[u8], sluice_store::StoreError> {
        self.key
            .get_or_try_init(|| async {
                let stored = store.put_meta_if_absent(META_KEY, &random(64)).await?;
                Ok(mac_bytes(
                    stored.as_bytes(),
                    &[self.admin_token_hash.as_bytes()],
                ))
            })
            .await
            .map(Vec::as_slice)
    }

    /// A new session of the admin token and its cookie value.
    pub async fn issue(
        &self,
        store: &dyn Store,
    ) -> Result<(Session, String), sluice_store::StoreError> {
        let key = self.key(store).await?;
        let id = random(24);
        let expires = Utc::now().timestamp() + SESSION_SECS;
        let mac = hex::encode(mac_bytes(
            key,
            &[b"session", id.as_bytes(), &expires.to_be_bytes()],
        ));
        let session = Session::new(&id, expires, csrf_for(key, &id), Principal::AdminToken);
        Ok((session, format!("{id}.{expires}.{mac}")))
    }

    /// A new session of `user`, recorded in the store with where it
    /// signed in from, and its cookie value.
    pub async fn issue_for_user(
        &self,
        store: &dyn Store,
        user: &User,
        ip: Option<String>,
        user_agent: Option<String>,
    ) -> Result<(Session, String), sluice_store::StoreError> {
        let key = self.key(store).await?;
        let id = random(24);
        let now = Utc::now().timestamp();
        let expires = now + SESSION_SECS;
        store
            .record_user_session(UserSession {
                id: id.clone(),
                user_id: user.id.clone(),
                created_at: now,
                expires_at: expires,
                ip,
                user_agent,
            })
            .await?;
        let mac = hex::encode(user_mac(key, &id, &user.id, expires));
        let principal = Principal::User {
            id: user.id.clone(),
            username: user.username.clone(),
            role: user.role,
        };
        let session = Session::new(&id, expires, csrf_for(key, &id), principal);
        Ok((session, format!("{id}.{}.{expires}.{mac}", user.id)))
    }

    /// The session named by the request's cookie, if valid, unexpired and
    /// not signed out (and, for a user's, the user still there).
    pub async fn verify(
        &self,
        store: &dyn Store,
        headers: &HeaderMap,
    ) -> Result<Option<Session>, sluice_store::StoreError> {
        let Some(value) = cookie(headers, SESSION_COOKIE) else {
            return Ok(None);
        };
        let key = self.key(store).await?;
        let parts: Vec<&str> = value.split('.').collect();
        let (id, user, expires, mac) = match parts.as_slice() {
            [id, expires, mac] => (*id, None, *expires, *mac),
            [id, user, expires, mac] => (*id, Some(*user), *expires, *mac),
            _ => return Ok(None),
        };
        let Ok(expires) = expires.parse::<i64>() else {
            return Ok(None);
        };
        let Ok(mac) = hex::decode(mac) else {
            return Ok(None);
        };
        let expected = match user {
            None => mac_bytes(key, &[b"session", id.as_bytes(), &expires.to_be_bytes()]),
            Some(user) => user_mac(key, id, user, expires),
        };
        if !bool::from(expected.as_slice().ct_eq(&mac)) || expires <= Utc::now().timestamp() {
            return Ok(None);
        }
        if self.is_revoked(id) {
            return Ok(None);
        }
        if store.session_revoked(id).await? {
            self.remember_revoked(id, expires);
            return Ok(None);
        }
        let principal = match user {
            None => Principal::AdminToken,
            Some(user) => match store.get_user(user).await? {
                Some(u) => Principal::User {
                    id: u.id,
                    username: u.username,
                    role: u.role,
                },
                None => return Ok(None),
            },
        };
        Ok(Some(Session::new(
            id,
            expires,
            csrf_for(key, id),
            principal,
        )))
    }

    /// Signs a session out, durably and for every node: its cookie is
    /// refused until it would have expired.
    /// A user's session leaves the user's list of sessions with its audit
    /// entry in the same transaction; the admin token's is noted after.
    pub async fn revoke(
        &self,
        app: &AppState,
        session: &Session,
    ) -> Result<(), sluice_store::StoreError> {
        let store = app.store.as_ref();
        let now = Utc::now().timestamp();
        let target = Target::new("session", "sign-out", Some(&session.id));
        let listed = match session.user_id() {
            Some(user) => {
                let entry = audit::entry(&session.actor, &target, None, None, true);
                store
                    .revoke_user_sessions(user, Some(&session.id), now, entry)
                    .await?
            }
            None => 0,
        };
        if listed == 0 {
            store
                .revoke_session(&session.id, session.expires, now)
                .await?;
            audit::note(app, &session.actor, target, None).await;
        }
        self.remember_revoked(&session.id, session.expires);
        Ok(())
    }

    fn remember_revoked(&self, id: &str, expires: i64) {
        let now = Utc::now().timestamp();
        let mut revoked = match self.revoked.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        revoked.retain(|_, exp| *exp > now);
        revoked.insert(id.to_owned(), expires);
    }

    fn is_revoked(&self, id: &str) -> bool {
        let revoked = match self.revoked.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        revoked.contains_key(id)
    }
}

fn new_mac(key: &[u8]) -> HmacSha256 {
    // HMAC accepts keys of any length; this cannot fail.
    match HmacSha256::new_from_slice(key) {
        Ok(m) => m,
        Err(_) => unreachable!("HMAC takes keys of any length"),
    }
}

/// HMAC-SHA256 over length-prefixed parts (so that parts cannot run together).
fn mac_bytes(key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    let mut m = new_mac(key);
    for part in parts {
        m.update(&(part.len() as u32).to_be_bytes());
        m.update(part);
    }
    m.finalize().into_bytes().to_vec()
}

/// The MAC of a user's session cookie.
fn user_mac(key: &[u8], id: &str, user: &str, expires: i64) -> Vec<u8> {
    mac_bytes(
        key,
        &[
            b"user-session",
            id.as_bytes(),
            user.as_bytes(),
            &expires.to_be_bytes(),
        ],
    )
}

fn csrf_for(key: &[u8], session_id: &str) -> String {
    hex::encode(&mac_bytes(key, &[b"csrf", session_id.as_bytes()])[..20])
}

/// Constant-time equality of two tokens.
pub fn tokens_match(a: &str, b: &str) -> bool {
    !a.is_empty() && a.as_bytes().ct_eq(b.as_bytes()).into()
}

/// The value of cookie `name` in the request.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// Whether the request reached us over HTTPS, as far as we can tell: Sluice
/// serves plain HTTP itself, so only a trusted proxy can say so.
pub fn is_https(headers: &HeaderMap, trust_proxy: bool) -> bool {
    trust_proxy
        && headers
            .get("x-forwarded-proto")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("https"))
}

/// A `Set-Cookie` value with the dashboard's attributes. `max_age` 0 clears.
pub fn set_cookie(name: &str, value: &str, max_age: i64, secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{name}={value}; Path=/; Max-Age={max_age}; HttpOnly; SameSite=Strict{secure}")
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;
