//! Writes attempt reports to the store in groups: whatever has finished
//! while the previous write was running, or within [`LINGER`] of the first
//! report of a group, goes into the next `report` call. At a few thousand
//! deliveries a second, each sent at once, a report would otherwise cost
//! the database a commit of its own.
//!
//! A write that fails (the database restarting, a network blip) is tried
//! again until it is durable, for as long as the deliveries' lease lasts:
//! an outcome dropped early means its delivery is sent again when the lease
//! ends, a duplicate for every send of the outage. Only once the lease has
//! run out, when another worker may already have claimed the delivery, is
//! the group given up; the pure [`next_pause`] decides. The lease is counted
//! from the first failure of an outage, not per group: groups queued behind
//! a failing one (at shutdown, say) are not each given a lease of their own.

use std::sync::Arc;
use std::time::{Duration, Instant};

use sluice_store::{AttemptReport, Outcome, Store};
use tokio::sync::{Notify, mpsc};

/// Most reports written in one call.
const MAX_GROUP: usize = 512;

/// How long a group waits for more reports after its first. A delivery's
/// outcome is then recorded this much later at most; its lease covers it,
/// and a process killed meanwhile sends it again after the restart, as it
/// would a delivery still in flight.
const LINGER: Duration = Duration::from_millis(5);

/// The first pause after a failed write; each next one doubles, up to
/// [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(50);
const MAX_PAUSE: Duration = Duration::from_secs(2);

/// A warning is logged for the first failed try of a group and then at most
/// this often, each counting the tries since.
const WARN_EVERY: Duration = Duration::from_secs(10);

/// Runs until every sender of `rx` is gone and the queue is drained.
/// `wake` is poked after writing a retry so the dispatcher re-reads
/// `next_due`; `lease` bounds how long a failing write is tried.
pub(super) async fn run(
    store: Arc<dyn Store>,
    mut rx: mpsc::UnboundedReceiver<AttemptReport>,
    wake: Arc<Notify>,
    lease: Duration,
) {
    // When the current run of failed writes began; `None` while writes work.
    let mut failing_since: Option<Instant> = None;
    while let Some(first) = rx.recv().await {
        let mut group = vec![first];
        let deadline = tokio::time::Instant::now() + LINGER;
        while group.len() < MAX_GROUP {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some(report)) => group.push(report),
                // The deadline passed, or every sender is gone.
                Ok(None) | Err(_) => break,
            }
        }
        let has_retry = group
            .iter()
            .any(|r| matches!(r.outcome, Outcome::Retry { .. }));
        write(store.as_ref(), group, lease, &mut failing_since).await;
        if has_retry {
            wake.notify_one();
        }
    }
}

async fn write(
    store: &dyn Store,
    group: Vec<AttemptReport>,
    lease: Duration,
    failing_since: &mut Option<Instant>,
) {
    let mut tries: u32 = 0;
    let mut warned: Option<Instant> = None;
    loop {
        let error = match store.report(group.clone()).await {
            Ok(()) => {
                *failing_since = None;
                if tries > 0 {
                    tracing::info!(
                        reports = group.len(),
                        tries = tries + 1,
                        "delivery reports written"
                    );
                }
                return;
            }
            Err(e) => e,
        };
        if !error.is_transient() {
            // Trying again cannot mend a fault; the lease hands the
            // deliveries out again once it ends.
            tracing::error!(
                error = %error,
                reports = group.len(),
                "delivery reports refused by the store; those deliveries will be claimed \
                 and sent again"
            );
            return;
        }
        tries += 1;
        let started = *failing_since.get_or_insert_with(Instant::now);
        let Some(pause) = next_pause(tries, started.elapsed(), lease) else {
            tracing::error!(
                error = %error,
                reports = group.len(),
                tries,
                "dropping delivery reports after their lease ran out; those deliveries \
                 will be claimed and sent again"
            );
            return;
        };
        if warned.is_none_or(|at| at.elapsed() >= WARN_EVERY) {
            warned = Some(Instant::now());
            tracing::warn!(error = %error, reports = group.len(), tries, "writing delivery reports failed; trying again");
        }
        tokio::time::sleep(pause).await;
    }
}

/// The pause before try `tries + 1` of a write whose tries began `elapsed`
/// ago, or `None` once another try could only end after `lease`: the
/// deliveries may be someone else's by then.
pub(super) fn next_pause(tries: u32, elapsed: Duration, lease: Duration) -> Option<Duration> {
    let doubled = FIRST_PAUSE.saturating_mul(1 << tries.saturating_sub(1).min(16));
    let pause = doubled.min(MAX_PAUSE);
    (elapsed + pause < lease).then_some(pause)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LEASE: Duration = Duration::from_secs(60);

    #[test]
    fn pauses_double_from_50_ms_up_to_2_s() {
        let pauses: Vec<_> = (1..=8)
            .map(|t| next_pause(t, Duration::ZERO, LEASE))
            .collect();
        let ms = |n| Some(Duration::from_millis(n));
        assert_eq!(
            pauses,
            [
                ms(50),
                ms(100),
                ms(200),
                ms(400),
                ms(800),
                ms(1600),
                ms(2000),
                ms(2000)
            ]
        );
        assert_eq!(next_pause(u32::MAX, Duration::ZERO, LEASE), ms(2000));
    }

    #[test]
    fn a_write_is_tried_for_the_whole_lease_and_no_longer() {
        assert!(next_pause(30, Duration::from_secs(57), LEASE).is_some());
        assert_eq!(next_pause(30, Duration::from_secs(58), LEASE), None);
        assert_eq!(next_pause(1, LEASE, LEASE), None);
    }

    #[test]
    fn a_30_s_outage_is_outlasted_with_the_default_lease() {
        let mut elapsed = Duration::ZERO;
        let mut tries = 0;
        while elapsed < Duration::from_secs(30) {
            tries += 1;
            elapsed += next_pause(tries, elapsed, LEASE).expect("still inside the lease");
        }
    }
}
