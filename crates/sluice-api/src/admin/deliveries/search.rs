//! The delivery log's search beyond state and messageId: the time window
//! (`since`, `until`), and what a delivery's call carries (`type`, `event`
//! or page name, `user`: userId or anonymousId) and what its URLs answered
//! (`status`: an HTTP status, a class such as `5xx`, or `error` for no
//! answer). The admin API's delivery lists and the dashboard's delivery
//! log read the same parameters with [`Search::from_query`].
//!
//! These are applied while paging ([`super::window::scan`]): a call is read
//! from the stored event, a status from the delivery's attempts, one
//! delivery at a time, so a page with them reads at most [`CONTENT_SCAN`]
//! deliveries.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sluice_store::{Attempt, DeliveryRecord, Store, StoreError};

use super::window::{Window, carried, parse_time};

/// Deliveries read at most for one page searched by call or status.
pub const CONTENT_SCAN: usize = 500;

/// What an attempt must have answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Exactly this status.
    Code(u16),
    /// Any status of this hundred (`5xx` is 5).
    Class(u16),
    /// No answer: a transport error (timeout, refused, TLS).
    Error,
}

impl Status {
    pub fn parse(s: &str) -> Result<Status, String> {
        let s = s.trim().to_ascii_lowercase();
        let bad = || format!("'{s}' is not a status (503), a class (5xx) or 'error'");
        if s == "error" {
            return Ok(Status::Error);
        }
        if let Some(class) = s.strip_suffix("xx") {
            return match class.parse::<u16>() {
                Ok(c) if (1..=5).contains(&c) => Ok(Status::Class(c)),
                _ => Err(bad()),
            };
        }
        match s.parse::<u16>() {
            Ok(c) if (100..=599).contains(&c) => Ok(Status::Code(c)),
            _ => Err(bad()),
        }
    }

    pub fn matches(self, a: &Attempt) -> bool {
        match (self, a.status) {
            (Status::Code(c), Some(got)) => got == c,
            (Status::Class(c), Some(got)) => got / 100 == c,
            (Status::Error, None) => true,
            _ => false,
        }
    }
}

/// The search of one delivery log page.
#[derive(Debug, Clone, Default)]
pub struct Search {
    pub window: Window,
    pub kind: Option<String>,
    pub name: Option<String>,
    pub user: Option<String>,
    pub status: Option<Status>,
}

/// The fields of the search, as the form and its links name them.
pub const FIELDS: [&str; 6] = ["since", "until", "type", "event", "user", "status"];

impl Search {
    /// The search a query asks for, and each field's error.
    pub fn from_query(q: &HashMap<String, String>, now: DateTime<Utc>) -> (Search, Vec<String>) {
        let mut s = Search::default();
        let mut errors = Vec::new();
        let text = |k: &str| {
            q.get(k)
                .map(|v| v.trim())
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        };
        for (key, slot) in [
            ("since", &mut s.window.since),
            ("until", &mut s.window.until),
        ] {
            if let Some(v) = text(key) {
                match parse_time(&v, now) {
                    Ok(t) => *slot = Some(t),
                    Err(e) => errors.push(format!("{key}: {e}")),
                }
            }
        }
        s.kind = text("type");
        s.name = text("event");
        s.user = text("user");
        if let Some(v) = text("status") {
            match Status::parse(&v) {
                Ok(st) => s.status = Some(st),
                Err(e) => errors.push(format!("status: {e}")),
            }
        }
        (s, errors)
    }

    /// Whether nothing beyond the admin API's own filters is asked.
    pub fn is_open(&self) -> bool {
        self.window.is_open() && !self.by_content()
    }

    /// Whether each delivery's call or attempts must be read.
    pub fn by_content(&self) -> bool {
        self.kind.is_some() || self.name.is_some() || self.user.is_some() || self.status.is_some()
    }

    /// Whether `d` (already in the window) matches the call and status asked.
    pub async fn keeps(&self, store: &dyn Store, d: &DeliveryRecord) -> Result<bool, StoreError> {
        if self.kind.is_some() || self.name.is_some() || self.user.is_some() {
            let Some(call) = carried(store, d).await? else {
                return Ok(false);
            };
            let same = |want: &Option<String>, got: Option<&str>| {
                want.as_deref().is_none_or(|w| got == Some(w))
            };
            if !same(&self.kind, Some(&call.kind))
                || !same(&self.name, call.name.as_deref())
                || !(same(&self.user, call.user.as_deref())
                    || same(&self.user, call.anonymous.as_deref()))
            {
                return Ok(false);
            }
        }
        if let Some(status) = self.status {
            let attempts = store.list_attempts(d.id).await?;
            return Ok(attempts.iter().any(|a| status.matches(a)));
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempt(status: Option<u16>) -> Attempt {
        Attempt {
            delivery_id: 1,
            attempt: 1,
            at: Utc::now(),
            url: "http://x".into(),
            status,
            error: status.is_none().then(|| "timeout".into()),
            latency_ms: 1,
            response: None,
        }
    }

    #[test]
    fn a_status_is_a_code_a_class_or_error() {
        assert_eq!(Status::parse("503"), Ok(Status::Code(503)));
        assert_eq!(Status::parse(" 5XX "), Ok(Status::Class(5)));
        assert_eq!(Status::parse("error"), Ok(Status::Error));
        for bad in ["", "6xx", "99", "600", "abc", "0xx"] {
            assert!(Status::parse(bad).is_err(), "{bad}");
        }
        assert!(Status::Class(5).matches(&attempt(Some(503))));
        assert!(!Status::Class(5).matches(&attempt(Some(429))));
        assert!(Status::Code(429).matches(&attempt(Some(429))));
        assert!(Status::Error.matches(&attempt(None)));
        assert!(!Status::Error.matches(&attempt(Some(500))));
    }

    #[test]
    fn a_query_reads_into_a_search_with_each_fields_error() {
        let q: HashMap<String, String> = [("type", "track"), ("user", " u1 "), ("status", "7xx")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        let (s, errors) = Search::from_query(&q, Utc::now());
        assert_eq!(s.kind.as_deref(), Some("track"));
        assert_eq!(s.user.as_deref(), Some("u1"));
        assert_eq!(s.status, None);
        assert_eq!(errors.len(), 1);
        assert!(errors[0].starts_with("status:"));
        assert!(s.by_content() && !s.is_open());
        assert!(Search::default().is_open());
    }
}
