//! Delivery health aggregates (`HealthStore`): merged per node shard into
//! five-minute and hourly buckets, summed on read, grouped into slots,
//! pruned by age.

use super::support::Shared;
use sluice_store::health::{BUCKET_MS, HOUR_MS, Health, HealthDelta, HealthQuery, HealthSlot};

/// An hour mark, the end of what these cases read.
const END: i64 = 1_700_000_000 / 3600 * HOUR_MS;

/// A delta of `destination`'s five-minute bucket `ago` buckets before END.
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

fn query(width: i64, buckets: u32, step: u32) -> HealthQuery {
    HealthQuery {
        width,
        end: END,
        buckets,
        step,
    }
}

fn sorted(mut slots: Vec<HealthSlot>) -> Vec<HealthSlot> {
    slots.sort_by(|a, b| (&a.destination_id, a.slot).cmp(&(&b.destination_id, b.slot)));
    slots
}

fn delivered(slots: Vec<HealthSlot>) -> Vec<(String, u32, u64)> {
    sorted(slots)
        .into_iter()
        .map(|s| (s.destination_id, s.slot, s.health.counts.delivered))
        .collect()
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
    let more = vec![
        delta("dst_a", 0, 5, 0, &[10_000]),
        delta("dst_b", 0, 1, 0, &[]),
    ];
    store.add_health(7, more).await.unwrap();
    let slots = sorted(store.read_health(&query(BUCKET_MS, 12, 1)).await.unwrap());
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

pub async fn health_is_kept_per_five_minutes_and_per_hour(store: Shared) {
    let deltas = vec![
        delta("dst_a", 0, 1, 0, &[5]),
        delta("dst_a", 11, 2, 0, &[5]),
        delta("dst_a", 12, 4, 0, &[]),
        delta("dst_a", 167 * 12 + 11, 8, 0, &[]),
        delta("dst_a", 168 * 12, 16, 0, &[]),
        // At the end: not read.
        delta("dst_a", -1, 32, 0, &[]),
    ];
    store.add_health(0, deltas).await.unwrap();
    let fine = store.read_health(&query(BUCKET_MS, 12, 1)).await.unwrap();
    assert_eq!(
        delivered(fine),
        [("dst_a".into(), 0, 1), ("dst_a".into(), 11, 2)]
    );
    let hourly = store.read_health(&query(HOUR_MS, 168, 1)).await.unwrap();
    let hourly = sorted(hourly);
    assert_eq!(
        hourly[0].health.latency.count(),
        2,
        "the hour holds its buckets' latencies"
    );
    assert_eq!(
        delivered(hourly),
        [
            ("dst_a".into(), 0, 3),
            ("dst_a".into(), 1, 4),
            ("dst_a".into(), 167, 8)
        ]
    );
    let six_hours = store.read_health(&query(HOUR_MS, 168, 6)).await.unwrap();
    assert_eq!(
        delivered(six_hours),
        [("dst_a".into(), 0, 7), ("dst_a".into(), 27, 8)]
    );
}

pub async fn health_buckets_older_than_the_cut_are_pruned(store: Shared) {
    let deltas = vec![
        delta("dst_a", 0, 1, 0, &[]),
        delta("dst_a", 3000, 1, 0, &[]),
    ];
    store.add_health(0, deltas).await.unwrap();
    let cut = END - HOUR_MS * 100;
    assert_eq!(
        store.prune_health(cut).await.unwrap(),
        2,
        "its bucket and its hour"
    );
    assert_eq!(store.prune_health(cut).await.unwrap(), 0);
    for width in [BUCKET_MS, HOUR_MS] {
        let left = store.read_health(&query(width, 4000, 4000)).await.unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].health.counts.delivered, 1);
    }
}
