use super::*;
use chrono::TimeZone;

const S: Duration = Duration::from_secs(1);

fn policy() -> RetryPolicy {
    RetryPolicy {
        window: Duration::from_secs(4 * 3600),
        backoff_base: S,
        backoff_cap: Duration::from_secs(600),
        max_retry_after: Duration::from_secs(600),
    }
}

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2024, 5, 1, 12, 0, 0).unwrap()
}

fn ctx(attempt: u32, elapsed: Duration) -> AttemptContext {
    AttemptContext {
        attempt,
        first_attempt_at: t0(),
        now: t0() + chrono_duration(elapsed),
    }
}

fn v(class: Class) -> UrlVerdict {
    UrlVerdict {
        class,
        retry_after: None,
        summary: format!("{class:?}"),
    }
}

#[test]
fn one_success_among_failures_succeeds() {
    let out = decide(
        &policy(),
        &[v(Class::Retryable), v(Class::Success), v(Class::Permanent)],
        ctx(1, Duration::ZERO),
        0.0,
    );
    assert_eq!(out, Outcome::Succeeded);
}

#[test]
fn only_permanent_failures_are_dead_at_once() {
    let out = decide(
        &policy(),
        &[v(Class::Permanent)],
        ctx(1, Duration::ZERO),
        0.0,
    );
    assert!(matches!(out, Outcome::Dead { ref error } if error.starts_with("not retryable")));
}

#[test]
fn one_retryable_failure_schedules_a_retry_after_backoff() {
    let out = decide(
        &policy(),
        &[v(Class::Permanent), v(Class::Retryable)],
        ctx(3, Duration::from_secs(10)),
        1.0,
    );
    let expected = t0() + chrono_duration(Duration::from_secs(10) + 4 * S);
    assert_eq!(out, Outcome::Retry { at: expected });
}

#[test]
fn retry_after_beyond_backoff_is_honoured() {
    let mut verdict = v(Class::Retryable);
    verdict.retry_after = Some(Duration::from_secs(42));
    let out = decide(&policy(), &[verdict], ctx(1, Duration::ZERO), 0.0);
    let expected = t0() + chrono_duration(Duration::from_secs(42));
    assert_eq!(out, Outcome::Retry { at: expected });
}

#[test]
fn exhausted_window_is_dead_with_the_last_errors() {
    let out = decide(
        &policy(),
        &[v(Class::Retryable)],
        ctx(20, Duration::from_secs(4 * 3600)),
        0.5,
    );
    match out {
        Outcome::Dead { error } => {
            assert!(error.contains("exhausted after 20 attempts"), "{error}");
            assert!(error.contains("Retryable"), "{error}");
        }
        other => panic!("expected dead, got {other:?}"),
    }
}

#[test]
fn last_retry_is_scheduled_at_the_window_end() {
    let out = decide(
        &policy(),
        &[v(Class::Retryable)],
        ctx(30, Duration::from_secs(4 * 3600 - 5)),
        1.0,
    );
    let deadline = t0() + chrono_duration(Duration::from_secs(4 * 3600));
    assert_eq!(out, Outcome::Retry { at: deadline });
}

#[test]
fn no_urls_is_dead() {
    let out = decide(&policy(), &[], ctx(1, Duration::ZERO), 0.0);
    assert!(matches!(out, Outcome::Dead { .. }));
}
