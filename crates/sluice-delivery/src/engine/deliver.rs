//! One delivery attempt: build and sign the body, post it to every URL,
//! and let the policy decide.

use bytes::Bytes;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sluice_signing::standard;
use sluice_store::{AttemptReport, Destination, DueDelivery, Outcome, StandardWebhooks};

use super::failure_log::FailureLog;
use crate::payload;
use crate::policy::{AttemptContext, RetryPolicy, decide};
use crate::sender::{Job, Sender, StandardHeaders};

/// Attempts `due` against `dest` and returns the report to store.
pub(super) async fn attempt(
    sender: &Sender,
    policy: &RetryPolicy,
    due: DueDelivery,
    dest: &Arc<Destination>,
    log: &FailureLog,
) -> AttemptReport {
    let started = Utc::now();
    let number = due.attempts.saturating_add(1);
    let body = match payload::render_event(&due.event_body) {
        Ok(body) => Bytes::from(body),
        Err(e) => {
            log.dead(&dest.id, &due.message_id, due.attempts, "invalid_payload");
            return AttemptReport {
                delivery_id: due.delivery_id,
                at: started,
                attempts: Vec::new(),
                outcome: Outcome::Dead {
                    error: e.to_string(),
                },
            };
        }
    };
    let signature = dest
        .settings
        .shared_secret
        .as_deref()
        .filter(|secret| !secret.is_empty())
        .map(|secret| sluice_signing::signature::sign(secret.as_bytes(), &body));
    let standard = dest
        .settings
        .standard_webhooks
        .as_ref()
        .and_then(|s| standard_headers(s, &dest.id, &due.message_id, &body, started));
    let job = Job {
        delivery_id: due.delivery_id,
        attempt: number,
        message_id: due.message_id.clone(),
        body,
        signature,
        standard,
        destination: Some(Arc::clone(dest)),
    };
    let results = sender
        .send_all_trusting(
            &dest.settings.urls,
            dest.settings.ca_bundle.as_deref(),
            &job,
        )
        .await;
    let now = Utc::now();
    let ctx = AttemptContext {
        attempt: number,
        first_attempt_at: window_start(&due, policy.window).unwrap_or(started),
        now,
    };
    for result in &results {
        log.attempt(&dest.id, &due.message_id, result);
    }
    let verdicts: Vec<_> = results.iter().map(|r| r.verdict.clone()).collect();
    let outcome = decide(policy, &verdicts, ctx, rand::random::<f64>());
    if matches!(outcome, Outcome::Dead { .. }) {
        let kind = results
            .iter()
            .find_map(|r| r.error_kind)
            .unwrap_or("no_urls");
        log.dead(&dest.id, &due.message_id, number, kind);
    }
    AttemptReport {
        delivery_id: due.delivery_id,
        at: now,
        attempts: results.into_iter().map(|r| r.attempt).collect(),
        outcome,
    }
}

/// The Standard Webhooks headers for one attempt at `now`: signed with the
/// current secret and, while a rotation's overlap runs, the previous one.
/// A stored secret that no longer parses signs nothing (the admin API
/// refuses such secrets, so only a hand-edited database gets here).
fn standard_headers(
    s: &StandardWebhooks,
    destination_id: &str,
    message_id: &str,
    body: &[u8],
    now: DateTime<Utc>,
) -> Option<StandardHeaders> {
    let current = standard::secret_key(&s.secret).ok()?;
    let previous = s
        .previous_secret
        .as_deref()
        .filter(|_| s.previous_until.is_some_and(|until| now < until))
        .and_then(|secret| standard::secret_key(secret).ok());
    let mut keys: Vec<&[u8]> = vec![&current];
    if let Some(previous) = &previous {
        keys.push(previous);
    }
    let id = standard::webhook_id(destination_id, message_id);
    let timestamp = now.timestamp();
    let signature = standard::signature_header(&keys, &id, timestamp, body);
    Some(StandardHeaders {
        id,
        timestamp,
        signature,
    })
}

/// The report for a delivery whose destination is gone or switched off:
/// nothing is sent ("a disabled destination receives nothing").
pub(super) fn discard(due: &DueDelivery, reason: &str) -> AttemptReport {
    AttemptReport {
        delivery_id: due.delivery_id,
        at: Utc::now(),
        attempts: Vec::new(),
        outcome: Outcome::Discarded {
            reason: reason.to_owned(),
        },
    }
}

/// The report that hands a claimed delivery back without attempting it
/// (its destination is saturated): no attempt is counted and it is due again
/// after `after`, instead of waiting out its whole lease.
pub(super) fn release(delivery_id: i64, after: Duration) -> AttemptReport {
    let now = Utc::now();
    let at = chrono::Duration::from_std(after).map_or(now, |d| now + d);
    AttemptReport {
        delivery_id,
        at: now,
        attempts: Vec::new(),
        outcome: Outcome::Retry { at },
    }
}

/// Where `due`'s retry window starts: the event's arrival, so that time
/// spent held back by an open breaker counts. A first attempt made more
/// than a window after arrival can only follow a replay (or a long
/// backlog), and starts a fresh window; a replayed delivery not attempted
/// since has no start yet (`None`).
pub(super) fn window_start(due: &DueDelivery, window: Duration) -> Option<DateTime<Utc>> {
    let window = chrono::Duration::from_std(window).unwrap_or(chrono::Duration::MAX);
    match due.first_attempt_at {
        Some(first) if first - due.received_at < window => Some(due.received_at),
        Some(first) => Some(first),
        None if due.attempts == 0 => Some(due.received_at),
        None => None,
    }
}

/// When `due`'s retry window ends, if it has started.
pub(super) fn window_end(due: &DueDelivery, window: Duration) -> Option<DateTime<Utc>> {
    let start = window_start(due, window)?;
    Some(start + chrono::Duration::from_std(window).unwrap_or(chrono::Duration::MAX))
}

/// The report for a delivery the open breaker holds back: dead, unsent,
/// once its window has ended; otherwise handed back for `wait`, but never
/// past the window's end, so it is declared dead on time.
pub(super) fn hold_back(
    due: &DueDelivery,
    wait: Duration,
    window: Duration,
    log: &FailureLog,
) -> AttemptReport {
    let now = Utc::now();
    let end = window_end(due, window);
    if end.is_some_and(|end| now >= end) {
        log.dead(
            &due.destination_id,
            &due.message_id,
            due.attempts,
            "circuit_open",
        );
        return AttemptReport {
            delivery_id: due.delivery_id,
            at: now,
            attempts: Vec::new(),
            outcome: Outcome::Dead {
                error: format!(
                    "retry window of {}s ended while the destination's circuit breaker \
                     was open; not sent again",
                    window.as_secs()
                ),
            },
        };
    }
    let mut report = release(due.delivery_id, wait);
    if let (Outcome::Retry { at }, Some(end)) = (&mut report.outcome, end) {
        *at = (*at).min(end);
    }
    report
}
