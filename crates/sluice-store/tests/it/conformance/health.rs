//! Delivery health aggregates (`HealthStore`): merged per node shard,
//! summed on read, grouped into slots, pruned by age.

use super::support::Shared;
use sluice_store::health::{BUCKET_MS, Health, HealthDelta, HealthQuery, HealthSlot};

/// The end of the bucket read as "now" by these cases.
const END: i64 = 1_700_000_100 * 1000 / BUCKET_MS * BUCKET_MS + BUCKET_MS;

/// A delta of `destination`'s bucket `ago` buckets before the newest.
fn delta(destination: &str, ago: i64, delivered: u64, dead: u64, latencies: &[u64]) -> HealthDelta {
    let mut health = Health::default();
    health.counts.delivered = delivered;
    health.counts.dead = dead;
    health.counts.filtered = 1;
    for &ms in latencies {
        health.latency.record(ms);
    }
    HealthDelta {
        destination_id: destination.into(),
        bucket_start: END - BUCKET_MS * (ago + 1),
        health,
    }
}

fn sorted(mut slots: Vec<HealthSlot>) -> Vec<HealthSlot> {
    slots.sort_by(|a, b| (&a.destination_id, a.slot).cmp(&(&b.destination_id, b.slot)));
    slots
}

pub async fn health_merges_add_up_across_flushes_and_node_shards(store: Shared) {
    store
        .add_health(1, vec![delta("dst_a", 0, 2, 1, &[10, 20, 30])])
        .await
        .unwrap();
    store
        .add_health(1, vec![delta("dst_a", 0, 3, 0, &[40])])
        .await
        .unwrap();
    store
        .add_health(
            7,
            vec![
                delta("dst_a", 0, 5, 0, &[10_000]),
                delta("dst_b", 0, 1, 0, &[]),
            ],
        )
        .await
        .unwrap();
    let slots = sorted(
        store
            .read_health(&HealthQuery {
                end: END,
                buckets: 12,
                step: 1,
            })
            .await
            .unwrap(),
    );
    assert_eq!(slots.len(), 2);
    let a = &slots[0];
    assert_eq!((a.destination_id.as_str(), a.slot), ("dst_a", 0));
    assert_eq!(a.health.counts.delivered, 10);
    assert_eq!(a.health.counts.dead, 1);
    assert_eq!(a.health.counts.filtered, 3);
    assert_eq!(a.health.latency.count(), 5);
    let mut expected = Health::default();
    for ms in [10, 20, 30, 40, 10_000] {
        expected.latency.record(ms);
    }
    assert_eq!(
        a.health.latency, expected.latency,
        "histograms merge bucket by bucket"
    );
    assert_eq!(slots[1].health.counts.delivered, 1);
}

pub async fn health_slots_group_buckets_back_from_the_end(store: Shared) {
    let deltas = vec![
        delta("dst_a", 0, 1, 0, &[]),
        delta("dst_a", 11, 2, 0, &[]),
        delta("dst_a", 12, 4, 0, &[]),
        delta("dst_a", 2015, 8, 0, &[]),
        delta("dst_a", 2016, 16, 0, &[]),
        // After the end: not read.
        delta("dst_a", -1, 32, 0, &[]),
    ];
    store.add_health(0, deltas).await.unwrap();
    let hourly = sorted(
        store
            .read_health(&HealthQuery {
                end: END,
                buckets: 2016,
                step: 12,
            })
            .await
            .unwrap(),
    );
    let got: Vec<(u32, u64)> = hourly
        .iter()
        .map(|s| (s.slot, s.health.counts.delivered))
        .collect();
    assert_eq!(got, [(0, 3), (1, 4), (167, 8)]);
    let fine = store
        .read_health(&HealthQuery {
            end: END,
            buckets: 12,
            step: 1,
        })
        .await
        .unwrap();
    let got: Vec<(u32, u64)> = sorted(fine)
        .iter()
        .map(|s| (s.slot, s.health.counts.delivered))
        .collect();
    assert_eq!(got, [(0, 1), (11, 2)]);
}

pub async fn health_buckets_older_than_the_cut_are_pruned(store: Shared) {
    store
        .add_health(
            0,
            vec![
                delta("dst_a", 0, 1, 0, &[]),
                delta("dst_a", 3000, 1, 0, &[]),
            ],
        )
        .await
        .unwrap();
    let cut = END - BUCKET_MS * 100;
    assert_eq!(store.prune_health(cut).await.unwrap(), 1);
    assert_eq!(store.prune_health(cut).await.unwrap(), 0);
    let left = store
        .read_health(&HealthQuery {
            end: END,
            buckets: 4000,
            step: 4000,
        })
        .await
        .unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].health.counts.delivered, 1);
}
