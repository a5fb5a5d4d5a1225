//! The delivery log's time window, and what each delivery's call carries
//! (its type, name and userId).
//!
//! The store lists deliveries by id, newest first, without a time filter.
//! A window is therefore applied while paging ([`scan`]): deliveries are
//! read newest first and kept when their last change (`updated_at`: when a
//! dead one died, when a succeeded one succeeded) falls in it, up to a page
//! of matches or a number of deliveries read, whichever comes first; the
//! next page goes on from where the reading stopped. The admin API's
//! delivery lists and the dashboard's delivery log both page this way.

use chrono::{DateTime, NaiveDate, NaiveDateTime, TimeDelta, Utc};
use serde_json::Value;
use sluice_store::{DeliveryFilter, DeliveryRecord, Store};

use super::search::Search;

/// Deliveries read at most for one page of a windowed log.
pub const SCAN: usize = 2000;
/// Rows per store read while scanning.
const CHUNK: u32 = 500;

/// A time typed into a window field: an RFC 3339 time, a UTC date and time
/// (`2026-11-28T10:00`, as a browser's date-time field sends it), a UTC
/// date, or an age before `now` (`90s`, `30m`, `2h`, `7d`), as the CLI's
/// `--since` reads it.
pub fn parse_time(s: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    let s = s.trim();
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Ok(t.with_timezone(&Utc));
    }
    for format in ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M"] {
        if let Ok(t) = NaiveDateTime::parse_from_str(s, format) {
            return Ok(t.and_utc());
        }
    }
    if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        return Ok(d.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc());
    }
    let bad = || {
        format!("'{s}' is not a time (2026-11-28T10:00, UTC; 2026-11-28) or an age (30m, 2h, 1d)")
    };
    let (digits, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: i64 = digits.parse().map_err(|_| bad())?;
    let unit_secs = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(bad()),
    };
    n.checked_mul(unit_secs)
        .and_then(TimeDelta::try_seconds)
        .and_then(|age| now.checked_sub_signed(age))
        .ok_or_else(bad)
}

/// A window `[since, until]`; either end may be open.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Window {
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
}

impl Window {
    pub fn is_open(&self) -> bool {
        self.since.is_none() && self.until.is_none()
    }

    pub fn holds(&self, t: DateTime<Utc>) -> bool {
        self.since.is_none_or(|s| t >= s) && self.until.is_none_or(|u| t <= u)
    }
}

/// Up to `want` deliveries matching `filter` whose last change is in
/// `search`'s window and that match the rest of it, newest first, reading
/// at most `scan`; and the cursor to go on from when more may match.
pub async fn scan(
    store: &dyn Store,
    filter: &DeliveryFilter,
    search: &Search,
    want: usize,
    scan: usize,
) -> Result<(Vec<DeliveryRecord>, Option<i64>), sluice_store::StoreError> {
    let mut kept = Vec::new();
    let mut read = 0usize;
    let mut cursor = filter.before_id;
    loop {
        let chunk = store
            .list_deliveries(&DeliveryFilter {
                before_id: cursor,
                limit: CHUNK,
                ..filter.clone()
            })
            .await?;
        let done = chunk.len() < CHUNK as usize;
        for d in chunk {
            read += 1;
            cursor = Some(d.id);
            if search.window.holds(d.updated_at) && search.keeps(store, &d).await? {
                kept.push(d);
            }
            if kept.len() >= want || read >= scan {
                return Ok((kept, cursor));
            }
        }
        if done {
            return Ok((kept, None));
        }
    }
}

/// What a delivery carries, read from its call as stored.
pub struct Carried {
    pub kind: String,
    pub name: Option<String>,
    pub user: Option<String>,
    pub anonymous: Option<String>,
}

/// The call of delivery `d`, if still stored.
pub async fn carried(
    store: &dyn Store,
    d: &DeliveryRecord,
) -> Result<Option<Carried>, sluice_store::StoreError> {
    let events = store
        .recent_events(&d.source_id, Some(d.event_seq.saturating_add(1)), 1)
        .await?;
    let Some(event) = events.into_iter().find(|e| e.seq == d.event_seq) else {
        return Ok(None);
    };
    let body: Value = serde_json::from_str(&event.body).unwrap_or(Value::Null);
    let text = |k: &str| body.get(k).and_then(Value::as_str).map(str::to_owned);
    Ok(Some(Carried {
        name: text("event").or_else(|| text("name")),
        user: text("userId"),
        anonymous: text("anonymousId"),
        kind: event.event_type,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-11-28T12:00:00Z")
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or_default()
    }

    #[test]
    fn times_read_as_the_cli_reads_them_plus_a_browser_date_time() {
        let at = |s: &str| parse_time(s, now()).map(|t| t.to_rfc3339());
        assert_eq!(at("2h").as_deref(), Ok("2026-11-28T10:00:00+00:00"));
        assert_eq!(at("90s").as_deref(), Ok("2026-11-28T11:58:30+00:00"));
        assert_eq!(at("1d").as_deref(), Ok("2026-11-27T12:00:00+00:00"));
        assert_eq!(at("2026-11-28").as_deref(), Ok("2026-11-28T00:00:00+00:00"));
        assert_eq!(
            at("2026-11-28T09:30").as_deref(),
            Ok("2026-11-28T09:30:00+00:00")
        );
        assert_eq!(
            at("2026-11-28T09:30:00+01:00").as_deref(),
            Ok("2026-11-28T08:30:00+00:00")
        );
        for bad in ["", "yesterday", "5w", "99999999999999999999d"] {
            assert!(parse_time(bad, now()).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_window_holds_its_ends() {
        let t = now();
        let w = Window {
            since: Some(t),
            until: Some(t),
        };
        assert!(w.holds(t));
        assert!(!w.holds(t + TimeDelta::seconds(1)));
        assert!(!w.holds(t - TimeDelta::seconds(1)));
        assert!(Window::default().holds(t));
        assert!(Window::default().is_open());
    }
}
