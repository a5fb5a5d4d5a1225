//! Deduplication of ingest by (source, messageId) within the window (the
//! stores' default, 24 hours).

use std::collections::HashSet;

use chrono::{DateTime, Utc};

use super::support::{Shared, at, deliveries_to, event};
use sluice_store::{AppendRequest, Appended, NewEvent};

async fn send(
    store: &Shared,
    source_id: &str,
    received_at: DateTime<Utc>,
    ids: &[&str],
) -> Appended {
    let events: Vec<NewEvent> = ids.iter().map(|id| event(id, &["dst_1"])).collect();
    store
        .append(AppendRequest {
            source_id: source_id.into(),
            received_at,
            events,
        })
        .await
        .expect("append")
}

async fn stored_ids(store: &Shared, source_id: &str) -> Vec<String> {
    let mut ids: Vec<String> = store
        .recent_events(source_id, None, 10_000)
        .await
        .expect("events")
        .into_iter()
        .map(|e| e.message_id)
        .collect();
    ids.reverse();
    ids
}

pub async fn a_resent_message_id_is_dropped_and_counted(store: Shared) {
    let first = send(&store, "src_a", at(0), &["m1", "m2"]).await;
    assert_eq!(
        first,
        Appended {
            stored: 2,
            duplicates: 0,
            ..Appended::default()
        }
    );
    // The client did not hear the answer and sends the batch again, plus a
    // new message.
    let again = send(&store, "src_a", at(30), &["m1", "m2", "m3"]).await;
    assert_eq!(
        again,
        Appended {
            stored: 1,
            duplicates: 2,
            ..Appended::default()
        }
    );
    let alone = send(&store, "src_a", at(3_600), &["m2"]).await;
    assert_eq!(
        alone,
        Appended {
            stored: 0,
            duplicates: 1,
            ..Appended::default()
        }
    );

    assert_eq!(stored_ids(&store, "src_a").await, ["m1", "m2", "m3"]);
    assert_eq!(deliveries_to(&store, "dst_1").await.len(), 3);
    let usage = store
        .usage("src_a", "2024-03-01", "2024-03-01")
        .await
        .expect("usage");
    assert_eq!(usage.len(), 1);
    assert_eq!(
        (usage[0].api_calls, usage[0].events, usage[0].duplicates),
        (3, 3, 3)
    );
}

pub async fn a_batch_repeating_a_message_id_stores_it_once(store: Shared) {
    let outcome = send(&store, "src_a", at(0), &["m1", "m2", "m1", "m1"]).await;
    assert_eq!(
        outcome,
        Appended {
            stored: 2,
            duplicates: 2,
            ..Appended::default()
        }
    );
    assert_eq!(stored_ids(&store, "src_a").await, ["m1", "m2"]);
    assert_eq!(deliveries_to(&store, "dst_1").await.len(), 2);
}

pub async fn the_same_message_id_from_another_source_is_stored(store: Shared) {
    send(&store, "src_a", at(0), &["m1"]).await;
    let other = send(&store, "src_b", at(1), &["m1"]).await;
    assert_eq!(
        other,
        Appended {
            stored: 1,
            duplicates: 0,
            ..Appended::default()
        }
    );
    assert_eq!(stored_ids(&store, "src_b").await, ["m1"]);
}

pub async fn concurrent_calls_with_one_message_id_store_it_once(store: Shared) {
    const CALLS: usize = 40;
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..CALLS {
        let store = store.clone();
        tasks.spawn(async move {
            let own = format!("own-{i}");
            send(&store, "src_a", at(0), &["shared", &own]).await
        });
    }
    let mut duplicates = 0;
    while let Some(joined) = tasks.join_next().await {
        duplicates += joined.expect("append task").duplicates;
    }
    assert_eq!(duplicates, CALLS as u64 - 1);
    let ids = stored_ids(&store, "src_a").await;
    assert_eq!(ids.len(), CALLS + 1);
    let distinct: HashSet<&String> = ids.iter().collect();
    assert_eq!(distinct.len(), ids.len(), "every id is stored once");
}

pub async fn a_message_id_older_than_the_window_is_stored_again(store: Shared) {
    send(&store, "src_a", at(0), &["m1"]).await;
    let within = send(&store, "src_a", at(23 * 3_600), &["m1"]).await;
    assert_eq!(within.duplicates, 1);
    // Past the window and the slack of its last generation (1/24 of it).
    let later = send(&store, "src_a", at(26 * 3_600), &["m1"]).await;
    assert_eq!(
        later,
        Appended {
            stored: 1,
            duplicates: 0,
            ..Appended::default()
        }
    );
    assert_eq!(stored_ids(&store, "src_a").await, ["m1", "m1"]);
}
