//! Unit tests of [`super`]: cookies, flags and CSRF tokens.
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
