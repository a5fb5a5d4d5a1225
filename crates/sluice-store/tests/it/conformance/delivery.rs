//! Leasing, reporting and replaying deliveries.

use std::time::Duration;

use super::support::{Shared, append, at, attempt, deliveries, deliveries_to, event, report};
use sluice_store::{AttemptReport, DeliveryFilter, DeliveryState, DueDelivery, Outcome};

const LEASE: Duration = Duration::from_secs(60);

fn message_ids(due: &[DueDelivery]) -> Vec<&str> {
    due.iter().map(|d| d.message_id.as_str()).collect()
}

async fn claim(store: &Shared, secs: i64, limit: u32) -> Vec<DueDelivery> {
    store
        .claim_due(at(secs), limit, LEASE)
        .await
        .expect("claim")
}

async fn claim_one(store: &Shared, secs: i64) -> DueDelivery {
    let mut due = claim(store, secs, 1).await;
    assert_eq!(due.len(), 1, "expected one due delivery at t0+{secs}s");
    due.remove(0)
}

pub async fn claim_due_leases_the_oldest_due_first(store: Shared) {
    append(&store, "src_a", at(1), vec![event("m2", &["dst_1"])]).await;
    append(&store, "src_a", at(0), vec![event("m1", &["dst_1"])]).await;
    append(&store, "src_a", at(10), vec![event("m3", &["dst_1"])]).await;

    let due = claim(&store, 5, 10).await;
    assert_eq!(
        message_ids(&due),
        vec!["m1", "m2"],
        "due ones only, oldest due first"
    );
    let first = &due[0];
    assert_eq!(first.destination_id, "dst_1");
    assert_eq!(first.event_body, r#"{"messageId":"m1","type":"track"}"#);
    assert_eq!(first.attempts, 0);
    assert_eq!(first.first_attempt_at, None);
    let events = store
        .recent_events("src_a", None, 10)
        .await
        .expect("events");
    let m1 = events
        .iter()
        .find(|e| e.message_id == "m1")
        .expect("m1 stored");
    assert_eq!(first.event_seq, m1.seq);

    assert!(
        claim(&store, 6, 10).await.is_empty(),
        "leased and future work is not handed out"
    );
}

pub async fn claim_due_respects_the_limit(store: Shared) {
    for i in 0..5 {
        append(
            &store,
            "src_a",
            at(i),
            vec![event(&format!("m{i}"), &["dst_1"])],
        )
        .await;
    }
    assert_eq!(message_ids(&claim(&store, 10, 2).await), vec!["m0", "m1"]);
    assert_eq!(
        message_ids(&claim(&store, 10, 10).await),
        vec!["m2", "m3", "m4"]
    );
}

pub async fn leased_delivery_is_claimed_again_after_its_lease_ends(store: Shared) {
    append(&store, "src_a", at(0), vec![event("m1", &["dst_1"])]).await;
    append(&store, "src_a", at(10), vec![event("m2", &["dst_1"])]).await;
    assert_eq!(message_ids(&claim(&store, 0, 10).await), vec!["m1"]);
    assert_eq!(
        message_ids(&claim(&store, 59, 10).await),
        vec!["m2"],
        "m1 is still leased"
    );
    assert_eq!(
        message_ids(&claim(&store, 60, 10).await),
        vec!["m1"],
        "m1's lease ended"
    );
    assert!(
        claim(&store, 68, 10).await.is_empty(),
        "m2 is leased until t0+119s"
    );
    assert_eq!(message_ids(&claim(&store, 119, 10).await), vec!["m2"]);
}

pub async fn report_success_records_attempts_and_finishes(store: Shared) {
    append(&store, "src_a", at(0), vec![event("m1", &["dst_1"])]).await;
    let due = claim_one(&store, 1).await;
    let attempts = vec![
        attempt(due.delivery_id, 1, at(1), 503),
        attempt(due.delivery_id, 1, at(2), 200),
    ];
    let done = AttemptReport {
        delivery_id: due.delivery_id,
        at: at(1),
        attempts: attempts.clone(),
        outcome: Outcome::Succeeded,
    };
    store.report(vec![done]).await.expect("report");

    let record = store
        .get_delivery(due.delivery_id)
        .await
        .expect("get")
        .expect("exists");
    assert_eq!(record.state, DeliveryState::Succeeded);
    assert_eq!(record.attempts, 1, "one attempt round per report");
    assert_eq!(record.first_attempt_at, Some(at(1)));
    let logged = store
        .list_attempts(due.delivery_id)
        .await
        .expect("attempts");
    assert_eq!(logged, attempts);
    assert!(
        claim(&store, 1000, 10).await.is_empty(),
        "finished work is never handed out"
    );
}

pub async fn report_retry_reschedules_and_keeps_the_first_attempt_time(store: Shared) {
    append(&store, "src_a", at(0), vec![event("m1", &["dst_1"])]).await;
    let due = claim_one(&store, 1).await;
    let retry = Outcome::Retry { at: at(30) };
    store
        .report(vec![report(due.delivery_id, 1, at(1), 503, retry)])
        .await
        .expect("report");

    let record = store
        .get_delivery(due.delivery_id)
        .await
        .expect("get")
        .expect("exists");
    assert_eq!(record.state, DeliveryState::Pending);
    assert_eq!(record.attempts, 1);
    assert_eq!(record.next_attempt_at, Some(at(30)));
    assert_eq!(record.first_attempt_at, Some(at(1)));
    assert!(record.last_error.is_some(), "a retry keeps why it failed");
    assert!(
        claim(&store, 29, 10).await.is_empty(),
        "not due before the retry time"
    );

    let again = claim_one(&store, 30).await;
    assert_eq!(again.attempts, 1);
    assert_eq!(again.first_attempt_at, Some(at(1)));
    let retry = Outcome::Retry { at: at(90) };
    store
        .report(vec![report(due.delivery_id, 2, at(30), 500, retry)])
        .await
        .expect("report");
    let record = store
        .get_delivery(due.delivery_id)
        .await
        .expect("get")
        .expect("exists");
    assert_eq!(record.attempts, 2);
    assert_eq!(
        record.first_attempt_at,
        Some(at(1)),
        "the retry window start is kept"
    );
    assert_eq!(
        store
            .list_attempts(due.delivery_id)
            .await
            .expect("attempts")
            .len(),
        2
    );
}

/// A worker that cannot take a claimed delivery now (its destination is
/// saturated) hands it back: a report without attempts releases the lease
/// and reschedules, without counting an attempt or starting the window.
pub async fn report_without_attempts_releases_the_lease(store: Shared) {
    append(&store, "src_a", at(0), vec![event("m1", &["dst_1"])]).await;
    let due = claim_one(&store, 1).await;
    let release = AttemptReport {
        delivery_id: due.delivery_id,
        at: at(1),
        attempts: Vec::new(),
        outcome: Outcome::Retry { at: at(2) },
    };
    store.report(vec![release]).await.expect("report");
    let record = store
        .get_delivery(due.delivery_id)
        .await
        .expect("get")
        .expect("exists");
    assert_eq!(record.state, DeliveryState::Pending);
    assert_eq!(record.attempts, 0, "a release is not an attempt");
    assert_eq!(
        record.first_attempt_at, None,
        "the retry window has not started"
    );
    let again = claim_one(&store, 2).await;
    assert_eq!(
        again.delivery_id, due.delivery_id,
        "claimable at once, lease gone"
    );
}

pub async fn report_dead_and_discarded_finish_with_their_reason(store: Shared) {
    append(
        &store,
        "src_a",
        at(0),
        vec![event("m1", &["dst_1"]), event("m2", &["dst_1"])],
    )
    .await;
    let due = claim(&store, 1, 10).await;
    assert_eq!(due.len(), 2);
    let dead = Outcome::Dead {
        error: "HTTP 400".into(),
    };
    let discarded = Outcome::Discarded {
        reason: "destination disabled".into(),
    };
    store
        .report(vec![
            report(due[0].delivery_id, 1, at(1), 400, dead),
            report(due[1].delivery_id, 1, at(1), 200, discarded),
        ])
        .await
        .expect("report");

    let first = store
        .get_delivery(due[0].delivery_id)
        .await
        .expect("get")
        .expect("exists");
    assert_eq!(first.state, DeliveryState::Dead);
    assert_eq!(first.last_error.as_deref(), Some("HTTP 400"));
    let second = store
        .get_delivery(due[1].delivery_id)
        .await
        .expect("get")
        .expect("exists");
    assert_eq!(second.state, DeliveryState::Discarded);
    assert_eq!(second.last_error.as_deref(), Some("destination disabled"));
    assert!(claim(&store, 1000, 10).await.is_empty());
    assert_eq!(store.next_due().await.expect("next due"), None);
}

pub async fn next_due_is_the_earliest_pending_time_after_leases(store: Shared) {
    assert_eq!(store.next_due().await.expect("next due"), None);
    append(&store, "src_a", at(0), vec![event("m1", &["dst_1"])]).await;
    append(&store, "src_a", at(10), vec![event("m2", &["dst_1"])]).await;
    assert_eq!(store.next_due().await.expect("next due"), Some(at(0)));

    let first = claim_one(&store, 0).await;
    assert_eq!(store.next_due().await.expect("next due"), Some(at(10)));
    claim_one(&store, 10).await;
    assert_eq!(
        store.next_due().await.expect("next due"),
        Some(at(60)),
        "m1's lease end"
    );

    store
        .report(vec![report(
            first.delivery_id,
            1,
            at(11),
            200,
            Outcome::Succeeded,
        )])
        .await
        .expect("report");
    assert_eq!(
        store.next_due().await.expect("next due"),
        Some(at(70)),
        "m2's lease end"
    );
}

pub async fn replay_moves_dead_deliveries_back_with_a_fresh_window(store: Shared) {
    let events = vec![
        event("m1", &["dst_1", "dst_2"]),
        event("m2", &["dst_1"]),
        event("m3", &["dst_1"]),
    ];
    append(&store, "src_a", at(0), events).await;
    let due = claim(&store, 1, 10).await;
    let mut reports = Vec::new();
    for d in &due {
        let outcome = if d.message_id == "m3" {
            Outcome::Succeeded
        } else {
            Outcome::Dead {
                error: "HTTP 410".into(),
            }
        };
        reports.push(report(d.delivery_id, 1, at(1), 410, outcome));
    }
    store.report(reports).await.expect("report");

    let only_dst_1 = DeliveryFilter {
        destination_id: Some("dst_1".into()),
        state: Some(DeliveryState::Succeeded),
        ..DeliveryFilter::default()
    };
    let moved = store.replay(&only_dst_1, at(100)).await.expect("replay");
    assert_eq!(moved, 2, "dead ones only; the filter's state is ignored");
    for d in deliveries_to(&store, "dst_1").await {
        if d.message_id == "m3" {
            assert_eq!(d.state, DeliveryState::Succeeded);
            continue;
        }
        assert_eq!(d.state, DeliveryState::Pending);
        assert_eq!(d.next_attempt_at, Some(at(100)));
        assert_eq!(d.first_attempt_at, None, "the retry window starts afresh");
        assert_eq!(d.attempts, 1, "history is kept");
    }
    assert_eq!(
        deliveries_to(&store, "dst_2").await[0].state,
        DeliveryState::Dead
    );

    assert!(claim(&store, 99, 10).await.is_empty());
    let again = claim(&store, 100, 10).await;
    assert_eq!(message_ids(&again), vec!["m1", "m2"]);
    assert!(
        again
            .iter()
            .all(|d| d.attempts == 1 && d.first_attempt_at.is_none())
    );
    // The replayed round follows the first in the delivery's attempts.
    let m1 = again[0].delivery_id;
    store
        .report(vec![report(m1, 2, at(100), 200, Outcome::Succeeded)])
        .await
        .expect("report");
    let logged = store.list_attempts(m1).await.expect("attempts");
    let statuses: Vec<(u32, Option<u16>)> = logged.iter().map(|a| (a.attempt, a.status)).collect();
    assert_eq!(statuses, vec![(1, Some(410)), (2, Some(200))]);
    assert_eq!((logged[0].at, logged[1].at), (at(1), at(100)));
    assert!(logged.iter().all(|a| a.delivery_id == m1));
    assert_eq!(store.replay(&only_dst_1, at(200)).await.expect("replay"), 0);

    // Dead without an attempt (an open breaker held it back until its
    // window ended): the replay time starts its fresh window, since no
    // attempt will before the breaker lets one through.
    append(&store, "src_a", at(300), vec![event("m4", &["dst_3"])]).await;
    let held: Vec<DueDelivery> = claim(&store, 300, 10)
        .await
        .into_iter()
        .filter(|d| d.message_id == "m4")
        .collect();
    assert_eq!(held.len(), 1);
    let unsent = AttemptReport {
        delivery_id: held[0].delivery_id,
        at: at(400),
        attempts: Vec::new(),
        outcome: Outcome::Dead {
            error: "window ended while the breaker was open".into(),
        },
    };
    store.report(vec![unsent]).await.expect("report");
    let only_dst_3 = DeliveryFilter {
        destination_id: Some("dst_3".into()),
        ..DeliveryFilter::default()
    };
    assert_eq!(store.replay(&only_dst_3, at(500)).await.expect("replay"), 1);
    let again = claim(&store, 500, 10).await;
    let m4: Vec<&DueDelivery> = again.iter().filter(|d| d.message_id == "m4").collect();
    assert_eq!(m4.len(), 1, "{again:?}");
    assert_eq!(m4[0].attempts, 0);
    assert_eq!(m4[0].first_attempt_at, Some(at(500)));
}

pub async fn list_deliveries_filters_and_pages_newest_first(store: Shared) {
    let events = ["m1", "m2", "m3"]
        .map(|m| event(m, &["dst_1", "dst_2"]))
        .to_vec();
    append(&store, "src_a", at(0), events).await;

    let all = deliveries(&store, DeliveryFilter::default()).await;
    assert_eq!(all.len(), 6);
    assert!(all.windows(2).all(|w| w[0].id > w[1].id), "newest first");
    let to_1 = deliveries_to(&store, "dst_1").await;
    assert_eq!(to_1.len(), 3);
    assert!(to_1.iter().all(|d| d.destination_id == "dst_1"));
    let by_message = DeliveryFilter {
        message_id: Some("m2".into()),
        ..DeliveryFilter::default()
    };
    let m2 = deliveries(&store, by_message).await;
    assert_eq!(m2.len(), 2);
    assert!(m2.iter().all(|d| d.message_id == "m2"));
    let dead = DeliveryFilter {
        state: Some(DeliveryState::Dead),
        ..DeliveryFilter::default()
    };
    assert!(deliveries(&store, dead).await.is_empty());

    let page = |before_id| DeliveryFilter {
        before_id,
        limit: 4,
        ..DeliveryFilter::default()
    };
    let first = store.list_deliveries(&page(None)).await.expect("page 1");
    assert_eq!(first, all[..4].to_vec());
    let second = store
        .list_deliveries(&page(Some(first[3].id)))
        .await
        .expect("page 2");
    assert_eq!(second, all[4..].to_vec(), "the cursor is exclusive");

    let one = store.get_delivery(all[0].id).await.expect("get");
    assert_eq!(one.as_ref(), Some(&all[0]));
    assert_eq!(
        store.get_delivery(all[0].id + 1000).await.expect("get"),
        None
    );
}

/// Thousands of events, so a backend that keeps message ids in blocks (the
/// SQLite one: a bloom filter per 4,096 seqs) is asked about complete
/// blocks, the open one above them, and an id found in both (sent by a
/// second source: one source's resend would be dropped as a duplicate).
pub async fn deliveries_are_found_by_message_id_among_thousands_of_events(store: Shared) {
    for batch in 0..90 {
        let events = (0..100)
            .map(|i| event(&format!("m-{}", batch * 100 + i), &["dst_1"]))
            .collect();
        append(&store, "src_a", at(batch), events).await;
    }
    append(&store, "src_b", at(90), vec![event("m-7", &["dst_1"])]).await;
    let by = |message_id: &str| DeliveryFilter {
        message_id: Some(message_id.into()),
        ..DeliveryFilter::default()
    };
    for id in ["m-4500", "m-8999"] {
        let found = deliveries(&store, by(id)).await;
        assert_eq!(found.len(), 1, "{id}");
        assert_eq!(found[0].message_id, id);
    }
    let twice = deliveries(&store, by("m-7")).await;
    assert_eq!(twice.len(), 2, "the first block and the last");
    assert!(twice[0].id > twice[1].id && twice.iter().all(|d| d.message_id == "m-7"));
    assert!(deliveries(&store, by("m-9000")).await.is_empty());
    let dead_only = DeliveryFilter {
        state: Some(DeliveryState::Dead),
        ..by("m-4500")
    };
    assert!(deliveries(&store, dead_only).await.is_empty());
}
