//! The ingest outbox, the event debugger and usage counters.

use std::collections::HashSet;

use chrono::DateTime;

use super::support::{Shared, append, at, deliveries, deliveries_to, event};
use sluice_store::{DeliveryFilter, DeliveryState, UsageDay};

pub async fn append_commits_events_deliveries_and_usage_together(store: Shared) {
    let events = vec![
        event("m1", &["dst_1"]),
        event("m2", &["dst_1", "dst_2"]),
        event("m3", &[]),
    ];
    append(&store, "src_a", at(0), events).await;

    let stored = store
        .recent_events("src_a", None, 10)
        .await
        .expect("events");
    let ids: Vec<_> = stored.iter().map(|e| e.message_id.as_str()).collect();
    assert_eq!(ids, vec!["m3", "m2", "m1"]);
    assert!(
        stored
            .iter()
            .all(|e| e.received_at == at(0) && e.source_id == "src_a")
    );
    assert_eq!(stored[2].body, r#"{"messageId":"m1","type":"track"}"#);
    assert_eq!(stored[2].event_type, "track");

    let all = deliveries(&store, DeliveryFilter::default()).await;
    assert_eq!(all.len(), 3, "one delivery per (event, destination)");
    for d in &all {
        assert_eq!(d.state, DeliveryState::Pending);
        assert_eq!(d.attempts, 0);
        assert_eq!(d.next_attempt_at, Some(at(0)), "due immediately");
        assert_eq!(d.first_attempt_at, None);
        assert_eq!(d.source_id, "src_a");
    }
    let to_2 = deliveries_to(&store, "dst_2").await;
    assert_eq!(to_2.len(), 1);
    assert_eq!(to_2[0].message_id, "m2");
    assert_eq!(to_2[0].event_seq, stored[1].seq);

    let usage = store
        .usage("src_a", "2024-03-01", "2024-03-01")
        .await
        .expect("usage");
    let expected = UsageDay {
        day: "2024-03-01".into(),
        api_calls: 1,
        events: 3,
        duplicates: 0,
    };
    assert_eq!(usage, vec![expected]);
}

pub async fn recent_events_are_newest_first_with_an_exclusive_cursor(store: Shared) {
    append(
        &store,
        "src_a",
        at(0),
        vec![event("m1", &[]), event("m2", &[])],
    )
    .await;
    append(&store, "src_b", at(1), vec![event("other", &[])]).await;
    append(
        &store,
        "src_a",
        at(2),
        vec![event("m3", &[]), event("m4", &[])],
    )
    .await;
    append(&store, "src_a", at(3), vec![event("m5", &[])]).await;

    let mut pages = Vec::new();
    let mut cursor = None;
    loop {
        let page = store.recent_events("src_a", cursor, 2).await.expect("page");
        let Some(last) = page.last() else { break };
        cursor = Some(last.seq);
        pages.push(
            page.iter()
                .map(|e| e.message_id.clone())
                .collect::<Vec<_>>(),
        );
        assert!(pages.len() <= 3, "pagination must end: {pages:?}");
    }
    assert_eq!(pages, vec![vec!["m5", "m4"], vec!["m3", "m2"], vec!["m1"]]);

    let all = store.recent_events("src_a", None, 10).await.expect("all");
    assert!(
        all.windows(2).all(|w| w[0].seq > w[1].seq),
        "seqs must increase with time"
    );
}

pub async fn usage_counts_calls_and_events_per_utc_day(store: Shared) {
    let last_ms_of_day = DateTime::from_timestamp_millis(1_709_337_599_999).expect("valid");
    let midnight = DateTime::from_timestamp_millis(1_709_337_600_000).expect("valid");
    append(
        &store,
        "src_a",
        last_ms_of_day,
        vec![event("m1", &[]), event("m2", &[])],
    )
    .await;
    append(&store, "src_a", midnight, vec![event("m3", &[])]).await;
    append(&store, "src_a", midnight, vec![event("m4", &[])]).await;
    append(&store, "src_b", midnight, vec![event("m5", &[])]).await;

    let usage = store
        .usage("src_a", "2024-03-01", "2024-03-31")
        .await
        .expect("usage");
    let day = |day: &str, api_calls, events| UsageDay {
        day: day.into(),
        api_calls,
        events,
        duplicates: 0,
    };
    assert_eq!(
        usage,
        vec![day("2024-03-01", 1, 2), day("2024-03-02", 2, 2)]
    );
    let one_day = store
        .usage("src_a", "2024-03-02", "2024-03-02")
        .await
        .expect("usage");
    assert_eq!(
        one_day,
        vec![day("2024-03-02", 2, 2)],
        "range bounds are inclusive"
    );
    let before = store
        .usage("src_a", "2024-02-01", "2024-02-29")
        .await
        .expect("usage");
    assert!(before.is_empty());
    let other = store
        .usage("src_b", "2024-03-01", "2024-03-31")
        .await
        .expect("usage");
    assert_eq!(other, vec![day("2024-03-02", 1, 1)]);
}

pub async fn concurrent_appends_are_all_stored_with_unique_seqs(store: Shared) {
    const TASKS: usize = 50;
    const PER_TASK: usize = 20;
    let mut tasks = tokio::task::JoinSet::new();
    for t in 0..TASKS {
        let store = store.clone();
        tasks.spawn(async move {
            let events = (0..PER_TASK)
                .map(|i| event(&format!("t{t}-e{i}"), &["dst_1"]))
                .collect();
            append(&store, "src_a", at(0), events).await;
        });
    }
    while let Some(joined) = tasks.join_next().await {
        joined.expect("append task");
    }

    let stored = store
        .recent_events("src_a", None, 5000)
        .await
        .expect("events");
    assert_eq!(stored.len(), TASKS * PER_TASK);
    let seqs: HashSet<i64> = stored.iter().map(|e| e.seq).collect();
    assert_eq!(seqs.len(), stored.len(), "seqs are unique");
    let ids: HashSet<&str> = stored.iter().map(|e| e.message_id.as_str()).collect();
    assert_eq!(ids.len(), stored.len(), "every event is stored once");
    for t in 0..TASKS {
        let mine: Vec<_> = stored
            .iter()
            .rev()
            .filter(|e| e.message_id.starts_with(&format!("t{t}-")))
            .map(|e| e.message_id.clone())
            .collect();
        let expected: Vec<_> = (0..PER_TASK).map(|i| format!("t{t}-e{i}")).collect();
        assert_eq!(mine, expected, "a request's events keep their order");
    }
    assert_eq!(deliveries_to(&store, "dst_1").await.len(), TASKS * PER_TASK);
    let usage = store
        .usage("src_a", "2024-03-01", "2024-03-01")
        .await
        .expect("usage");
    assert_eq!(usage[0].api_calls, TASKS as u64);
    assert_eq!(usage[0].events, (TASKS * PER_TASK) as u64);
}
