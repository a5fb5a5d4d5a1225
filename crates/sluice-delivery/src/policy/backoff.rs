//! Backoff delays and `Retry-After` parsing.

use std::time::Duration;

use chrono::{DateTime, Utc};

/// Exponential backoff with full jitter, floored at `base`.
///
/// Retry `n` (1-based) waits a uniformly random time in
/// `[base, min(cap, base * 2^(n-1))]`. Full jitter spreads retries of a burst
/// that failed together; the floor keeps a retry from firing immediately.
/// `jitter` is the random draw in `[0, 1]`, injected so tests are exact.
pub fn backoff(base: Duration, cap: Duration, retry: u32, jitter: f64) -> Duration {
    let exp = retry.saturating_sub(1).min(63);
    let ceiling = base
        .checked_mul(1u32.checked_shl(exp).unwrap_or(u32::MAX))
        .unwrap_or(cap)
        .min(cap)
        .max(base);
    let spread = ceiling.saturating_sub(base);
    base + spread.mul_f64(jitter.clamp(0.0, 1.0))
}

/// Parses a `Retry-After` value: delta-seconds or an HTTP-date. A date in
/// the past means "now" (zero). Anything else is ignored (`None`).
pub fn parse_retry_after(value: &str, now: DateTime<Utc>) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    // IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT") is valid RFC 2822.
    let at = DateTime::parse_from_rfc2822(value).ok()?;
    let delta = at.with_timezone(&Utc) - now;
    Some(delta.to_std().unwrap_or(Duration::ZERO))
}

/// The delay before the next attempt: the backoff, raised to what the server
/// asked for with `Retry-After`, but never beyond `max_retry_after` (nor
/// below the backoff, so a `Retry-After: 0` cannot cause a hot loop).
pub fn next_delay(
    backoff: Duration,
    retry_after: Option<Duration>,
    max_retry_after: Duration,
) -> Duration {
    match retry_after {
        Some(asked) => asked.min(max_retry_after).max(backoff),
        None => backoff,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn backoff_doubles_per_retry_up_to_the_cap() {
        let cap = Duration::from_secs(600);
        assert_eq!(backoff(S, cap, 1, 1.0), S);
        assert_eq!(backoff(S, cap, 2, 1.0), 2 * S);
        assert_eq!(backoff(S, cap, 5, 1.0), 16 * S);
        assert_eq!(backoff(S, cap, 11, 1.0), cap);
        assert_eq!(backoff(S, cap, 1000, 1.0), cap);
    }

    #[test]
    fn backoff_jitter_spreads_between_base_and_ceiling() {
        let cap = Duration::from_secs(600);
        assert_eq!(backoff(S, cap, 3, 0.0), S);
        assert_eq!(backoff(S, cap, 3, 0.5), Duration::from_millis(2500));
        assert_eq!(backoff(S, cap, 3, 7.0), 4 * S, "jitter is clamped");
    }

    #[test]
    fn retry_after_accepts_seconds_and_http_dates() {
        let now = Utc.with_ymd_and_hms(2024, 1, 1, 0, 0, 0).unwrap();
        assert_eq!(parse_retry_after("120", now), Some(120 * S));
        assert_eq!(parse_retry_after(" 3 ", now), Some(3 * S));
        assert_eq!(
            parse_retry_after("Mon, 01 Jan 2024 00:00:30 GMT", now),
            Some(30 * S)
        );
        assert_eq!(
            parse_retry_after("Sun, 31 Dec 2023 23:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-5", now), None);
    }

    #[test]
    fn retry_after_is_clamped_between_backoff_and_max() {
        let max = Duration::from_secs(60);
        assert_eq!(next_delay(2 * S, Some(30 * S), max), 30 * S);
        assert_eq!(next_delay(2 * S, Some(Duration::ZERO), max), 2 * S);
        assert_eq!(next_delay(2 * S, Some(3600 * S), max), max);
        assert_eq!(next_delay(2 * S, None, max), 2 * S);
    }
}
