//! Webhook URLs parsed once, not once per request.
//!
//! A destination's URLs change only through the admin API, yet every
//! attempt needs the URL parsed (WHATWG parsing, with IDNA for the host),
//! its host for the process log and its masked form for the attempt log.
//! That parse was about 4 % of the CPU time of draining a backlog. The
//! cache is keyed by the URL text, so an edited URL is simply a new entry;
//! it is emptied when it reaches [`CAPACITY`] entries, which bounds the
//! memory a stream of edits can take.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use sluice_outbound::mask::mask_url;

/// Entries kept before the cache starts over.
const CAPACITY: usize = 1024;

/// What a send needs to know about one URL text.
#[derive(Debug)]
pub(super) struct ParsedUrl {
    /// `None`: the text is not a valid URL.
    pub url: Option<reqwest::Url>,
    /// The URL as the attempt log shows it: as configured, or masked when
    /// it carries credentials (or does not parse).
    pub shown: String,
    /// The host alone, for the process log.
    pub host: String,
}

impl ParsedUrl {
    fn parse(text: &str) -> ParsedUrl {
        let url = reqwest::Url::parse(text).ok();
        let shown = match &url {
            Some(u) if u.username().is_empty() && u.password().is_none() => text.to_owned(),
            _ => mask_url(text),
        };
        let host = super::parsed_host(url.as_ref());
        ParsedUrl { url, shown, host }
    }
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
    fn an_invalid_url_is_remembered_as_invalid() {
        let cache = UrlCache::default();
        let bad = cache.get("not a url");
        assert!(bad.url.is_none());
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
