//! Lenient timestamp parsing and canonical rendering.
//!
//! Clients disagree on ISO 8601: analytics-go v2 sends whole seconds with a
//! colon-less offset (`2009-11-10T23:00:00+0000`), browsers send milliseconds
//! and `Z`, Python sends microseconds and `+00:00`, Go's RFC 3339 nano sends
//! up to nine digits, and analytics-node passes a caller's string through
//! unchanged (`2024-05-06`, `2024-05-06T19:11Z`). Rejecting any of them would
//! drop a whole batch, so [`parse()`] accepts all of them; [`format()`]
//! renders one canonical form.

use chrono::{DateTime, FixedOffset, NaiveDate, NaiveDateTime, NaiveTime, SecondsFormat, Utc};

/// Parses an ISO 8601 date-time leniently:
///
/// - `YYYY-MM-DD` alone, meaning 00:00:00 UTC of that day (no offset may
///   follow it);
/// - or `YYYY-MM-DD`, then `T`, `t` or a space, then `HH:MM` or `HH:MM:SS`;
/// - after seconds only, an optional fraction after `.` or `,`: any number
///   of digits, of which the first nine (nanoseconds) count and the rest
///   are dropped;
/// - after a time, offset `Z`/`z`, `±HH:MM`, `±HHMM` or `±HH`; when
///   missing, UTC is assumed (naive timestamps from scripts are
///   overwhelmingly UTC, and rejecting them would lose the whole request).
///
/// The date alone and the time without seconds are what Segment's own
/// parser (`@segment/isodate`) takes and analytics-node passes through
/// unchanged: refusing them would drop the whole batch.
///
/// Returns `None` for anything else, including out-of-range fields and an
/// instant whose UTC date leaves years 0000–9999 (`9999-12-31T23:59:59-01:00`):
/// [`format()`] would render it with a signed, expanded year
/// (`+10000-01-01T…`), which JavaScript's `Date` and Python's
/// `fromisoformat` cannot read.
pub fn parse(s: &str) -> Option<DateTime<Utc>> {
    let mut cur = Cursor(s.trim().as_bytes());
    let year = cur.digits(4)?;
    cur.expect(b'-')?;
    let month = cur.digits(2)?;
    cur.expect(b'-')?;
    let day = cur.digits(2)?;
    let date = NaiveDate::from_ymd_opt(i32::try_from(year).ok()?, month, day)?;
    if cur.0.is_empty() {
        // A date alone is midnight UTC; it stays within years 0000–9999.
        return Some(date.and_time(NaiveTime::MIN).and_utc());
    }
    let time = clock(&mut cur)?;
    let offset = offset(&mut cur)?;
    if !cur.0.is_empty() {
        return None;
    }
    let utc = NaiveDateTime::new(date, time).checked_sub_offset(offset)?;
    Some(utc.and_utc()).filter(is_renderable)
}

/// Renders `t` as ISO 8601 UTC with exactly three fractional digits and `Z`
/// (`2009-11-10T23:00:00.000Z`): the form every delivered message carries
/// (docs/webhook-payloads.md), and what JavaScript's `Date.toISOString` produces.
pub fn format(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Whether `t` renders as a plain four-digit-year timestamp that [`parse`]
/// reads back. [`parse`] refuses any other instant; arithmetic on client
/// timestamps can still leave that range.
pub(crate) fn is_renderable(t: &DateTime<Utc>) -> bool {
    use chrono::Datelike;
    (0..=9999).contains(&t.year())
}

/// Reads the separator and `HH:MM`, then optionally `:SS` and a fraction
/// (a fraction needs seconds: `HH:MM.5` is refused by the offset).
fn clock(cur: &mut Cursor<'_>) -> Option<NaiveTime> {
    cur.expect_any(b"Tt ")?;
    let hour = cur.digits(2)?;
    cur.expect(b':')?;
    let minute = cur.digits(2)?;
    let (second, nanos) = match cur.expect(b':') {
        Some(()) => (cur.digits(2)?, fraction_nanos(cur)?),
        None => (0, 0),
    };
    NaiveTime::from_hms_nano_opt(hour, minute, second, nanos)
}

/// Reads an optional fraction and returns it as nanoseconds.
fn fraction_nanos(cur: &mut Cursor<'_>) -> Option<u32> {
    if cur.expect_any(b".,").is_none() {
        return Some(0);
    }
    let count = cur.0.iter().take_while(|b| b.is_ascii_digit()).count();
    if count == 0 {
        return None;
    }
    let (digits, rest) = cur.0.split_at(count);
    cur.0 = rest;
    let mut nanos = 0u32;
    for place in 0..9 {
        let digit = digits.get(place).map_or(0, |d| u32::from(d - b'0'));
        nanos = nanos * 10 + digit;
    }
    Some(nanos)
}

/// Reads the UTC offset; an empty remainder means UTC.
fn offset(cur: &mut Cursor<'_>) -> Option<FixedOffset> {
    let sign = match cur.0.first() {
        None => return FixedOffset::east_opt(0),
        Some(b'Z' | b'z') => {
            cur.0 = &cur.0[1..];
            return FixedOffset::east_opt(0);
        }
        Some(b'+') => 1,
        Some(b'-') => -1,
        Some(_) => return None,
    };
    cur.0 = &cur.0[1..];
    let hours = cur.digits(2)?;
    let minutes = if cur.0.is_empty() {
        0
    } else {
        let _ = cur.expect(b':');
        cur.digits(2)?
    };
    if hours > 23 || minutes > 59 {
        return None;
    }
    let secs = i32::try_from(hours * 3600 + minutes * 60).ok()?;
    FixedOffset::east_opt(sign * secs)
}

/// A byte cursor over the timestamp text.
struct Cursor<'a>(&'a [u8]);

impl Cursor<'_> {
    /// Reads exactly `n` ASCII digits as a number.
    fn digits(&mut self, n: usize) -> Option<u32> {
        let head = self.0.get(..n)?;
        let mut value = 0u32;
        for &b in head {
            if !b.is_ascii_digit() {
                return None;
            }
            value = value * 10 + u32::from(b - b'0');
        }
        self.0 = &self.0[n..];
        Some(value)
    }

    fn expect(&mut self, want: u8) -> Option<()> {
        self.expect_any(&[want])
    }

    fn expect_any(&mut self, set: &[u8]) -> Option<()> {
        let (&first, rest) = self.0.split_first()?;
        if !set.contains(&first) {
            return None;
        }
        self.0 = rest;
        Some(())
    }
}

#[cfg(test)]
#[path = "time_tests.rs"]
mod tests;
