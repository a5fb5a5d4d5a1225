//! What the engine counts into the node's delivery health tally
//! ([`sluice_store::health`]) as it decides outcomes: one outcome per
//! report, and the latency of every HTTP attempt it carries.

use sluice_store::health::{Health, Tally};
use sluice_store::{AttemptReport, Outcome};

/// Adds `report`'s outcome to `destination_id`'s counts at the report's
/// time. A report without attempts that hands the delivery back (a full
/// destination, an open breaker) was not an outcome and counts nothing.
pub(super) fn outcome(tally: Option<&Tally>, destination_id: &str, report: &AttemptReport) {
    let Some(tally) = tally else {
        return;
    };
    if matches!(report.outcome, Outcome::Retry { .. }) && report.attempts.is_empty() {
        return;
    }
    tally.add(destination_id, report.at.timestamp_millis(), |h| {
        count(h, report);
    });
}

/// [`outcome`]'s additions to one aggregate.
fn count(h: &mut Health, report: &AttemptReport) {
    let c = &mut h.counts;
    match report.outcome {
        Outcome::Succeeded => c.delivered += 1,
        Outcome::Retry { .. } => c.retrying += 1,
        Outcome::Dead { .. } => c.dead += 1,
        Outcome::Discarded { .. } => c.discarded += 1,
    }
    for a in &report.attempts {
        h.latency.record(a.latency_ms);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{DateTime, Utc};
    use sluice_store::Attempt;

    fn report(outcome: Outcome, latencies: &[u64]) -> AttemptReport {
        let at = DateTime::<Utc>::from_timestamp(1_700_000_000, 0).unwrap_or_default();
        AttemptReport {
            delivery_id: 1,
            at,
            attempts: latencies
                .iter()
                .map(|&latency_ms| Attempt {
                    delivery_id: 1,
                    attempt: 1,
                    at,
                    url: "http://x".into(),
                    status: Some(200),
                    error: None,
                    latency_ms,
                    response: None,
                })
                .collect(),
            outcome,
        }
    }

    #[test]
    fn each_outcome_counts_once_with_every_attempts_latency() {
        let t = Tally::with_shard(0);
        let retry = Outcome::Retry { at: Utc::now() };
        outcome(Some(&t), "d", &report(Outcome::Succeeded, &[10, 20]));
        outcome(Some(&t), "d", &report(retry.clone(), &[5000]));
        outcome(
            Some(&t),
            "d",
            &report(Outcome::Dead { error: "x".into() }, &[]),
        );
        outcome(
            Some(&t),
            "d",
            &report(
                Outcome::Discarded {
                    reason: "off".into(),
                },
                &[],
            ),
        );
        outcome(Some(&t), "d", &report(retry, &[]));
        let out = t.take();
        assert_eq!(out.len(), 1);
        let c = out[0].health.counts;
        assert_eq!((c.delivered, c.retrying, c.dead, c.discarded), (1, 1, 1, 1));
        assert_eq!(out[0].health.latency.count(), 3);
    }

    #[test]
    fn a_hand_back_counts_nothing() {
        let t = Tally::with_shard(0);
        outcome(
            Some(&t),
            "d",
            &report(Outcome::Retry { at: Utc::now() }, &[]),
        );
        assert!(t.is_empty());
        outcome(None, "d", &report(Outcome::Succeeded, &[1]));
    }
}
