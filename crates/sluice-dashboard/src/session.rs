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
use sluice_store::Store;
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

    /// A new session and its cookie value.
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
        let session = Session {
            csrf: csrf_for(key, &id),
            id: id.clone(),
            expires,
        };
        Ok((session, format!("{id}.{expires}.{mac}")))
    }

    /// The session named by the request's cookie, if valid, unexpired and
    /// not signed out.
    pub async fn verify(
        &self,
        store: &dyn Store,
        headers: &HeaderMap,
    ) -> Result<Option<Session>, sluice_store::StoreError> {
        let Some(value) = cookie(headers, SESSION_COOKIE) else {
            return Ok(None);
        };
        let key = self.key(store).await?;
        let mut parts = value.split('.');
        let (Some(id), Some(expires), Some(mac), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Ok(None);
        };
        let Ok(expires) = expires.parse::<i64>() else {
            return Ok(None);
        };
        let Ok(mac) = hex::decode(mac) else {
            return Ok(None);
        };
        let mut m = new_mac(key);
        for part in [b"session".as_slice(), id.as_bytes(), &expires.to_be_bytes()] {
            m.update(&(part.len() as u32).to_be_bytes());
            m.update(part);
        }
        if m.verify_slice(&mac).is_err() || expires <= Utc::now().timestamp() {
            return Ok(None);
        }
        if self.is_revoked(id) {
            return Ok(None);
        }
        if store.session_revoked(id).await? {
            self.remember_revoked(id, expires);
            return Ok(None);
        }
        Ok(Some(Session {
            csrf: csrf_for(key, id),
            id: id.to_owned(),
            expires,
        }))
    }

    /// Signs a session out, durably and for every node: its cookie is
    /// refused until it would have expired.
    pub async fn revoke(
        &self,
        store: &dyn Store,
        session: &Session,
    ) -> Result<(), sluice_store::StoreError> {
        let now = Utc::now().timestamp();
        store
            .revoke_session(&session.id, session.expires, now)
            .await?;
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
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn cookie_is_found_among_others() {
        let mut h = HeaderMap::new();
        h.insert(
            COOKIE,
            HeaderValue::from_static("a=1; sluice_session=x.y.z; b=2"),
        );
        assert_eq!(cookie(&h, SESSION_COOKIE), Some("x.y.z"));
        assert_eq!(cookie(&h, "c"), None);
    }

    #[test]
    fn secure_only_when_a_trusted_proxy_says_https() {
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-proto", HeaderValue::from_static("https"));
        assert!(is_https(&h, true));
        assert!(!is_https(&h, false));
        assert!(set_cookie("a", "b", 1, true).ends_with("; Secure"));
        assert!(!set_cookie("a", "b", 1, false).contains("Secure"));
    }

    #[test]
    fn csrf_depends_on_key_and_session() {
        assert_ne!(csrf_for(b"k", "s1"), csrf_for(b"k", "s2"));
        assert_ne!(csrf_for(b"k1", "s1"), csrf_for(b"k2", "s1"));
        assert!(!tokens_match("", ""));
        assert!(tokens_match("abc", "abc"));
    }
}
