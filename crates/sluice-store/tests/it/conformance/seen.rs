//! The Kafka shape's saved deduplication keys (`SeenStore`): slices saved
//! per partition, loaded newest first within a window and a key budget,
//! trimmed by age and by budget.

use super::support::Shared;
use sluice_store::SeenSlice;

const TOPIC: &str = "sluice.events";

fn slice(partition: i32, upto: i64, newest_at: i64, keys: &[u64]) -> SeenSlice {
    SeenSlice {
        partition,
        upto,
        newest_at,
        keys: keys.to_vec(),
    }
}

/// Three slices of partition 0 (4 keys each, accepted at 1, 2 and 3 s)
/// and one of partition 1.
async fn saved(store: &Shared) -> Vec<SeenSlice> {
    let zero = vec![
        slice(0, 10, 1_000, &[1, 2, 3, 4]),
        slice(0, 20, 2_000, &[5, 6, 7, u64::MAX]),
        slice(0, 30, 3_000, &[9, 10, 11, 12]),
    ];
    store.save_seen(TOPIC, &zero).await.unwrap();
    store
        .save_seen(TOPIC, &[slice(1, 7, 3_000, &[100, 101])])
        .await
        .unwrap();
    zero
}

pub async fn saved_keys_load_oldest_first_within_the_window_and_the_budget(store: Shared) {
    let zero = saved(&store).await;
    assert_eq!(store.load_seen(TOPIC, 0, 0, 100).await.unwrap(), zero);
    assert_eq!(
        store.load_seen(TOPIC, 0, 0, 5).await.unwrap(),
        zero[1..],
        "the newest slices whose newer keys are under the budget"
    );
    assert_eq!(
        store.load_seen(TOPIC, 0, 2_500, 100).await.unwrap(),
        zero[2..],
        "slices whose newest call left the window are not loaded"
    );
    assert!(
        store
            .load_seen("other", 0, 0, 100)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.load_seen(TOPIC, 1, 0, 100).await.unwrap().len(), 1);
}

pub async fn a_slice_saved_again_at_the_same_offset_keeps_its_first_keys(store: Shared) {
    let zero = saved(&store).await;
    store
        .save_seen(TOPIC, &[slice(0, 30, 9_000, &[77])])
        .await
        .unwrap();
    assert_eq!(store.load_seen(TOPIC, 0, 0, 100).await.unwrap(), zero);
}

pub async fn trimming_drops_slices_past_the_window_or_past_the_budget(store: Shared) {
    let zero = saved(&store).await;
    assert_eq!(store.trim_seen(TOPIC, 1_500, 100).await.unwrap(), 1);
    assert_eq!(store.load_seen(TOPIC, 0, 0, 100).await.unwrap(), zero[1..]);
    assert_eq!(
        store.trim_seen(TOPIC, 0, 4).await.unwrap(),
        1,
        "partition 0 keeps its newest 4 keys; partition 1 is within budget"
    );
    assert_eq!(store.load_seen(TOPIC, 0, 0, 100).await.unwrap(), zero[2..]);
    assert_eq!(store.load_seen(TOPIC, 1, 0, 100).await.unwrap().len(), 1);
}
