//! Credentials: write keys on the collection API, the admin token on the
//! admin API. Secrets are compared through their SHA-256 in constant time
//! and never logged.

use axum::http::HeaderMap;
use axum::http::header::AUTHORIZATION;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

/// The write key from `Authorization: Basic base64(key:)`, if that is the
/// scheme used. The password is ignored and the colon is optional, as the
/// Segment libraries differ on both.
pub fn basic_write_key(headers: &HeaderMap) -> Option<String> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, rest) = value.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = STANDARD.decode(rest.trim()).ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let user = text.split_once(':').map_or(text.as_str(), |(u, _)| u);
    (!user.is_empty()).then(|| user.to_owned())
}

/// The token of `Authorization: Bearer <token>`, if present.
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, rest) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| rest.trim())
        .filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn with_auth(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(AUTHORIZATION, HeaderValue::from_str(v).unwrap());
        h
    }

    #[test]
    fn basic_key_with_and_without_colon() {
        let with = with_auth(&format!("Basic {}", STANDARD.encode("wk1:")));
        let without = with_auth(&format!("Basic {}", STANDARD.encode("wk1")));
        assert_eq!(basic_write_key(&with).as_deref(), Some("wk1"));
        assert_eq!(basic_write_key(&without).as_deref(), Some("wk1"));
    }

    #[test]
    fn bearer_is_not_a_basic_key() {
        let h = with_auth("Bearer abc");
        assert_eq!(basic_write_key(&h), None);
        assert_eq!(bearer_token(&h), Some("abc"));
    }

    #[test]
    fn garbage_basic_is_ignored() {
        assert_eq!(basic_write_key(&with_auth("Basic !!!")), None);
        assert_eq!(
            basic_write_key(&with_auth(&format!("Basic {}", STANDARD.encode(":pw")))),
            None
        );
    }
}
