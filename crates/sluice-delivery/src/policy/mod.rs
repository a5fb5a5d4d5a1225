//! The retry policy, pure: classify each URL's result, compute the backoff,
//! and decide the delivery's outcome. No I/O, no clock, no randomness: the
//! caller passes `now` and the jitter draw, so every branch is unit-tested.
//!
//! - [`classify`]: status codes and transport errors → [`Class`].
//! - [`mod@backoff`]: exponential backoff with jitter, `Retry-After` parsing.
//! - [`log_budget`]: per-destination rate limit of process-log lines.

pub mod backoff;
pub mod classify;
pub mod log_budget;

use std::time::Duration;

use chrono::{DateTime, Utc};
use sluice_store::Outcome;

pub use backoff::{backoff, next_delay, parse_retry_after};
pub use classify::{Class, TransportError, classify_error, classify_status};

/// Retry timings (see [`crate::DeliveryConfig`] for the meaning of each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    pub window: Duration,
    pub backoff_base: Duration,
    pub backoff_cap: Duration,
    pub max_retry_after: Duration,
}

/// The result of one URL attempt, as the policy sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlVerdict {
    pub class: Class,
    /// The endpoint's `Retry-After`, already parsed.
    pub retry_after: Option<Duration>,
    /// A short human summary (`https://x/y: HTTP 503`) for the dead reason.
    pub summary: String,
}

/// Where a delivery stands when the policy decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttemptContext {
    /// This attempt's number, 1-based.
    pub attempt: u32,
    /// When the first attempt started (this one's start when it is the first).
    pub first_attempt_at: DateTime<Utc>,
    pub now: DateTime<Utc>,
}

/// Decides a delivery's outcome from the verdicts of all its URLs.
///
/// Any success wins (the message counts as processed and no URL is retried).
/// Otherwise one retryable failure is enough to retry, until the window,
/// measured from the first attempt, is used up; a final attempt is scheduled
/// at the window's end rather than skipping it. `jitter` is in `[0, 1]`.
pub fn decide(
    policy: &RetryPolicy,
    verdicts: &[UrlVerdict],
    ctx: AttemptContext,
    jitter: f64,
) -> Outcome {
    if verdicts.iter().any(|v| v.class == Class::Success) {
        return Outcome::Succeeded;
    }
    if verdicts.is_empty() {
        return Outcome::Dead {
            error: "destination has no webhook URLs".to_owned(),
        };
    }
    let summary = summarize(verdicts);
    let retryable: Vec<&UrlVerdict> = verdicts
        .iter()
        .filter(|v| v.class == Class::Retryable)
        .collect();
    if retryable.is_empty() {
        return Outcome::Dead {
            error: format!("not retryable: {summary}"),
        };
    }
    let deadline = ctx.first_attempt_at + chrono_duration(policy.window);
    if ctx.now >= deadline {
        return Outcome::Dead {
            error: format!(
                "retry window of {}s exhausted after {} attempts: {summary}",
                policy.window.as_secs(),
                ctx.attempt
            ),
        };
    }
    // Honour the most demanding Retry-After among the URLs that will be retried.
    let retry_after = retryable.iter().filter_map(|v| v.retry_after).max();
    let wait = next_delay(
        backoff(policy.backoff_base, policy.backoff_cap, ctx.attempt, jitter),
        retry_after,
        policy.max_retry_after,
    );
    let at = (ctx.now + chrono_duration(wait)).min(deadline);
    Outcome::Retry { at }
}

fn summarize(verdicts: &[UrlVerdict]) -> String {
    verdicts
        .iter()
        .map(|v| v.summary.as_str())
        .collect::<Vec<_>>()
        .join("; ")
}

fn chrono_duration(d: Duration) -> chrono::TimeDelta {
    chrono::TimeDelta::from_std(d).unwrap_or(chrono::TimeDelta::MAX)
}

#[cfg(test)]
mod tests;
