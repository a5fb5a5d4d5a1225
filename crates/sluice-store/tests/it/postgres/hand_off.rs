//! A call read from the Kafka shape's event log handed to retry state with
//! its first attempts: at once, once, and not counted in usage.

use sluice_store::{
    Attempt, AttemptReport, DeliveryFilter, DeliveryState, DeliveryStore, EventStore, Outcome,
};

use super::{TestSchema, at, request};

fn tried(status: u16, outcome: Outcome) -> AttemptReport {
    AttemptReport {
        delivery_id: 0,
        at: at(1),
        attempts: vec![Attempt {
            delivery_id: 0,
            attempt: 1,
            at: at(1),
            url: "https://example.test/hook".into(),
            status: Some(status),
            error: None,
            latency_ms: 12,
            response: None,
        }],
        outcome,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handed_off_call_enters_retry_state_with_its_attempts_once_and_uncounted() {
    let schema = TestSchema::new();
    let store = schema.open().await;
    let mut call = request("src_a", &["m1".to_owned()], at(0));
    call.events[0].destination_ids = vec!["dst_1".into(), "dst_2".into()];
    let reports = vec![
        (
            "dst_1".to_owned(),
            tried(503, Outcome::Retry { at: at(30) }),
        ),
        (
            "dst_2".to_owned(),
            tried(
                400,
                Outcome::Dead {
                    error: "HTTP 400".into(),
                },
            ),
        ),
    ];
    assert!(
        store
            .hand_off(call.clone(), reports.clone())
            .await
            .expect("hand off")
    );

    // Nothing is due before the retry: no delivery was ever unattempted.
    let lease = std::time::Duration::from_secs(60);
    assert!(
        store
            .claim_due(at(2), 10, lease)
            .await
            .expect("claim")
            .is_empty()
    );
    let mut rows = store
        .list_deliveries(&DeliveryFilter {
            message_id: Some("m1".into()),
            limit: 10,
            ..DeliveryFilter::default()
        })
        .await
        .expect("list");
    rows.sort_by(|a, b| a.destination_id.cmp(&b.destination_id));
    let seen: Vec<(&str, DeliveryState, u32)> = rows
        .iter()
        .map(|r| (r.destination_id.as_str(), r.state, r.attempts))
        .collect();
    assert_eq!(
        seen,
        [
            ("dst_1", DeliveryState::Pending, 1),
            ("dst_2", DeliveryState::Dead, 1)
        ]
    );
    assert_eq!(
        store
            .list_attempts(rows[0].id)
            .await
            .expect("attempts")
            .len(),
        1
    );
    let due = store.claim_due(at(31), 10, lease).await.expect("claim");
    assert_eq!(due.len(), 1, "the retry falls due");

    // Read again after a crash: the store already holds it.
    assert!(!store.hand_off(call, reports).await.expect("again"));
    let day = at(0).format("%Y-%m-%d").to_string();
    let usage = store.usage("src_a", &day, &day).await.expect("usage");
    assert!(
        usage.iter().all(|u| u.api_calls == 0 && u.events == 0),
        "counted by the log's reader, not here: {usage:?}"
    );
}
