//! The Kafka shape's usage counts (`TallyStore`): each range of a
//! partition counted once, into the usage every reader sees.

use super::support::Shared;
use sluice_store::{BlockedCount, DayCounts, LogTally, UsageDay};

const TOPIC: &str = "sluice.events";
const DAY: &str = "2024-03-01";

fn tally(partition: i32, from: i64, upto: i64, events: u64) -> LogTally {
    LogTally {
        partition,
        from,
        upto,
        days: vec![DayCounts {
            source_id: "src_a".into(),
            day: DAY.into(),
            api_calls: 1,
            events,
            duplicates: 1,
        }],
        blocked: vec![BlockedCount {
            source_id: "src_a".into(),
            day: DAY.into(),
            event: "Spam".into(),
            count: 2,
        }],
    }
}

async fn usage(store: &Shared) -> Vec<UsageDay> {
    store.usage("src_a", DAY, DAY).await.unwrap()
}

fn day(api_calls: u64, events: u64, duplicates: u64) -> Vec<UsageDay> {
    vec![UsageDay {
        day: DAY.into(),
        api_calls,
        events,
        duplicates,
    }]
}

pub async fn log_tallies_count_each_range_once_across_partitions(store: Shared) {
    assert_eq!(store.tallied(TOPIC, 0).await.unwrap(), None);
    let refused = store
        .add_tallies(TOPIC, &[tally(0, 0, 10, 5)])
        .await
        .unwrap();
    assert!(refused.is_empty());
    assert_eq!(usage(&store).await, day(1, 5, 1));
    assert_eq!(store.tallied(TOPIC, 0).await.unwrap(), Some(10));

    // Another node counted up to 10 already: a range from 5 is refused,
    // and nothing of it is added, while partition 1 is counted.
    let refused = store
        .add_tallies(TOPIC, &[tally(0, 5, 12, 7), tally(1, 0, 4, 3)])
        .await
        .unwrap();
    assert_eq!(refused, vec![0]);
    assert_eq!(store.tallied(TOPIC, 0).await.unwrap(), Some(10));
    assert_eq!(store.tallied(TOPIC, 1).await.unwrap(), Some(4));
    assert_eq!(usage(&store).await, day(2, 8, 2), "partitions add up");

    store
        .add_tallies(TOPIC, &[tally(0, 10, 20, 1)])
        .await
        .unwrap();
    assert_eq!(usage(&store).await, day(3, 9, 3));
    let blocked = store.blocked_usage("src_a", DAY, DAY).await.unwrap();
    assert_eq!(blocked.len(), 1);
    assert_eq!((blocked[0].event.as_str(), blocked[0].count), ("Spam", 6));
    assert_eq!(store.tallied("other", 0).await.unwrap(), None);
}

pub async fn a_log_tally_past_the_counted_position_applies(store: Shared) {
    store
        .add_tallies(TOPIC, &[tally(2, 0, 10, 1)])
        .await
        .unwrap();
    // The range 10..30 was never counted (its node could not write).
    let refused = store
        .add_tallies(TOPIC, &[tally(2, 30, 40, 1)])
        .await
        .unwrap();
    assert!(refused.is_empty());
    assert_eq!(store.tallied(TOPIC, 2).await.unwrap(), Some(40));
    assert_eq!(usage(&store).await, day(2, 2, 2));
}
