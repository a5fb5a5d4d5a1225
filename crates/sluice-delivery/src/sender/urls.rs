//! Webhook URLs parsed once, not once per request.
//!
//! A destination's URLs change only through the admin API, yet every
//! attempt needs the URL parsed (WHATWG parsing, with IDNA for the host),
//! the request target, its host for the process log and its masked form for
//! the attempt log.
//!
//! Credentials in a URL (`https://user:pass@host/…`) are sent the way HTTP
//! clients send them: as `Authorization: Basic`, percent-decoded, and never
//! in the request target. A static `Authorization` header on the URL entry
//! wins over them.
//! That parse was about 4 % of the CPU time of draining a backlog. The
//! cache is keyed by the URL text, so an edited URL is simply a new entry;
//! it is emptied when it reaches [`CAPACITY`] entries, which bounds the
//! memory a stream of edits can take.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use http::{HeaderValue, Uri};
use percent_encoding::percent_decode_str;
use sluice_outbound::mask::mask_url;

/// Entries kept before the cache starts over.
const CAPACITY: usize = 1024;

/// What a send needs to know about one URL text.
#[derive(Debug)]
pub(super) struct ParsedUrl {
    /// `None`: the text is not a valid URL.
    pub url: Option<url::Url>,
    /// What the request goes to: the URL without credentials or fragment
    /// (`None`: not a valid URL, or not one HTTP can carry).
    pub target: Option<Uri>,
    /// `Authorization: Basic …` from the URL's credentials, if it has any.
    pub authorization: Option<HeaderValue>,
    /// The URL as the attempt log shows it: as configured, or masked when
    /// it carries credentials (or does not parse).
    pub shown: String,
    /// The host alone, for the process log.
    pub host: String,
    /// The credentials' forms a receiver may echo, hidden in the stored
    /// response: the password as written and decoded (the user name too
    /// when it is the only credential) and the `Basic` token as sent.
    pub secrets: Vec<String>,
}

impl ParsedUrl {
    fn parse(text: &str) -> ParsedUrl {
        let url = url::Url::parse(text).ok();
        let shown = match &url {
            Some(u) if u.username().is_empty() && u.password().is_none() => text.to_owned(),
            _ => mask_url(text),
        };
        let host = super::parsed_host(url.as_ref());
        let (target, authorization) = match &url {
            Some(u) => (request_target(u), basic_auth(u)),
            None => (None, None),
        };
        let secrets = url
            .as_ref()
            .map(|u| userinfo_secrets(u, authorization.as_ref()))
            .unwrap_or_default();
        ParsedUrl {
            url,
            target,
            authorization,
            shown,
            host,
            secrets,
        }
    }
}

/// `url` without its credentials and fragment, as an HTTP request URI.
fn request_target(url: &url::Url) -> Option<Uri> {
    let mut bare = url.clone();
    bare.set_fragment(None);
    // Fails only for URLs that cannot have credentials, which have none.
    let _ = bare.set_username("");
    let _ = bare.set_password(None);
    bare.as_str().parse().ok()
}

/// The URL's credentials as a `Basic` authorization value (marked
/// sensitive, so HTTP tooling does not print it).
fn basic_auth(url: &url::Url) -> Option<HeaderValue> {
    if url.username().is_empty() && url.password().is_none() {
        return None;
    }
    let user = percent_decode_str(url.username()).decode_utf8().ok()?;
    let password = match url.password() {
        Some(p) => percent_decode_str(p).decode_utf8().ok()?,
        None => "".into(),
    };
    let token = STANDARD.encode(format!("{user}:{password}"));
    let mut value = HeaderValue::from_str(&format!("Basic {token}")).ok()?;
    value.set_sensitive(true);
    Some(value)
}

/// See [`ParsedUrl::secrets`]. A user name beside a password is not a
/// secret on its own (often `api` or `user`): hiding every occurrence of it
/// would mangle the snippet; it is hidden inside the `Basic` token.
fn userinfo_secrets(url: &url::Url, authorization: Option<&HeaderValue>) -> Vec<String> {
    let mut secrets = Vec::new();
    let mut add = |raw: &str| {
        if raw.is_empty() {
            return;
        }
        if let Ok(decoded) = percent_decode_str(raw).decode_utf8()
            && decoded != raw
        {
            secrets.push(decoded.into_owned());
        }
        secrets.push(raw.to_owned());
    };
    match url.password() {
        Some(password) => add(password),
        None => add(url.username()),
    }
    if let Some(token) = authorization
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
    {
        secrets.push(token.to_owned());
    }
    secrets
}

/// Parsed URLs by their text.
#[derive(Debug, Default)]
pub(super) struct UrlCache {
    by_text: Mutex<HashMap<String, Arc<ParsedUrl>>>,
}

impl UrlCache {
    /// `text` parsed, from the cache when it was seen before.
    pub(super) fn get(&self, text: &str) -> Arc<ParsedUrl> {
        if let Ok(map) = self.by_text.lock()
            && let Some(found) = map.get(text)
        {
            return found.clone();
        }
        let parsed = Arc::new(ParsedUrl::parse(text));
        if let Ok(mut map) = self.by_text.lock() {
            if map.len() >= CAPACITY {
                map.clear();
            }
            map.insert(text.to_owned(), parsed.clone());
        }
        parsed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_once_and_masks_credentials() {
        let cache = UrlCache::default();
        let a = cache.get("https://user:secret@hooks.example.com/in?t=1");
        let b = cache.get("https://user:secret@hooks.example.com/in?t=1");
        assert!(Arc::ptr_eq(&a, &b), "the second lookup is the cached entry");
        assert!(!a.shown.contains("secret"), "{}", a.shown);
        assert_eq!(a.host, "hooks.example.com");
        assert!(a.url.is_some());
    }

    #[test]
    fn credentials_move_from_the_target_to_a_basic_authorization() {
        let cache = UrlCache::default();
        let a = cache.get("https://us%40er:p%3Ass@hooks.example.com:8443/in?t=1#frag");
        let target = a.target.as_ref().expect("an HTTP target");
        assert_eq!(target.to_string(), "https://hooks.example.com:8443/in?t=1");
        let auth = a.authorization.as_ref().expect("credentials");
        // base64("us@er:p:ss")
        assert_eq!(auth, "Basic dXNAZXI6cDpzcw==");
        assert!(auth.is_sensitive());
        let plain = cache.get("http://127.0.0.1:9/hook");
        assert!(plain.authorization.is_none());
        assert_eq!(
            plain.target.as_ref().map(ToString::to_string).as_deref(),
            Some("http://127.0.0.1:9/hook")
        );
    }

    #[test]
    fn the_secrets_to_hide_are_the_password_its_basic_token_or_a_lone_user_name() {
        let cache = UrlCache::default();
        let a = cache.get("https://us%40er:p%3Ass@hooks.example.com/in");
        // Decoded (as the receiver could learn it), as written, base64("us@er:p:ss").
        assert_eq!(a.secrets, ["p:ss", "p%3Ass", "dXNAZXI6cDpzcw=="]);
        let key_only = cache.get("https://apikey-123@hooks.example.com/");
        assert_eq!(key_only.secrets, ["apikey-123", "YXBpa2V5LTEyMzo="]);
        assert!(cache.get("https://hooks.example.com/").secrets.is_empty());
    }

    #[test]
    fn an_invalid_url_is_remembered_as_invalid() {
        let cache = UrlCache::default();
        let bad = cache.get("not a url");
        assert!(bad.url.is_none());
        assert!(bad.target.is_none());
        assert_eq!(bad.host, "(invalid URL)");
    }

    #[test]
    fn starts_over_when_full() {
        let cache = UrlCache::default();
        let first = cache.get("https://a.example.com/0");
        for i in 1..=CAPACITY {
            cache.get(&format!("https://a.example.com/{i}"));
        }
        let again = cache.get("https://a.example.com/0");
        assert!(!Arc::ptr_eq(&first, &again), "the full cache was emptied");
        let len = cache.by_text.lock().map(|m| m.len()).unwrap_or(0);
        assert!(len <= CAPACITY);
    }
}
