//! One node's delivery health in memory, between two merges into the
//! store. Counting takes a lock held for a few additions; the merge task
//! takes everything at once ([`Tally::take`]) and writes it in one call,
//! and puts it back when that write fails ([`Tally::restore`]), so a
//! store outage delays counts rather than losing them. What is lost on
//! `kill -9` is what was counted since the last merge.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use super::{Health, HealthDelta, bucket_start};

/// How many node shards there are: each node draws one at start.
pub const SHARDS: i32 = 1024;

/// The aggregate of one node: per destination, per bucket.
#[derive(Debug)]
pub struct Tally {
    shard: i32,
    /// Per destination, its buckets since the last merge (usually one or
    /// two, so a list).
    buckets: Mutex<HashMap<String, Vec<(i64, Health)>>>,
}

impl Default for Tally {
    fn default() -> Self {
        Tally::new()
    }
}

impl Tally {
    /// A tally on a random shard: nodes need distinct shards, not known
    /// ones; two nodes that draw the same one share rows, which is only
    /// slower.
    pub fn new() -> Tally {
        Tally::with_shard(rand::random_range(0..SHARDS))
    }

    pub fn with_shard(shard: i32) -> Tally {
        Tally {
            shard,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// The node shard its rows are written to.
    pub fn shard(&self) -> i32 {
        self.shard
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Vec<(i64, Health)>>> {
        // Counting cannot leave the map half-changed: a panic elsewhere
        // while it was held poisons nothing worth refusing.
        self.buckets.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Lets `change` count into `destination_id`'s bucket of `at_ms`.
    pub fn add(&self, destination_id: &str, at_ms: i64, change: impl FnOnce(&mut Health)) {
        let start = bucket_start(at_ms);
        let mut map = self.lock();
        let buckets = match map.get_mut(destination_id) {
            Some(b) => b,
            None => map.entry(destination_id.to_owned()).or_default(),
        };
        match buckets.iter_mut().find(|(s, _)| *s == start) {
            Some((_, h)) => change(h),
            None => {
                let mut h = Health::default();
                change(&mut h);
                buckets.push((start, h));
            }
        }
    }

    /// Everything counted since the last take, emptied.
    pub fn take(&self) -> Vec<HealthDelta> {
        let map = std::mem::take(&mut *self.lock());
        let mut out = Vec::new();
        for (destination_id, buckets) in map {
            for (bucket_start, health) in buckets {
                if !health.is_empty() {
                    out.push(HealthDelta {
                        destination_id: destination_id.clone(),
                        bucket_start,
                        health,
                    });
                }
            }
        }
        out
    }

    /// Puts back what a failed write took, added to what was counted since.
    pub fn restore(&self, deltas: Vec<HealthDelta>) {
        for d in deltas {
            self.add(&d.destination_id, d.bucket_start, |h| h.merge(&d.health));
        }
    }

    /// Whether nothing waits to be written.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::BUCKET_MS;

    #[test]
    fn counts_gather_per_destination_and_bucket() {
        let t = Tally::with_shard(3);
        t.add("a", 10, |h| h.counts.delivered += 1);
        t.add("a", BUCKET_MS - 1, |h| h.counts.delivered += 1);
        t.add("a", BUCKET_MS, |h| h.counts.dead += 1);
        t.add("b", 10, |h| h.latency.record(40));
        let mut out = t.take();
        out.sort_by(|x, y| {
            (&x.destination_id, x.bucket_start).cmp(&(&y.destination_id, y.bucket_start))
        });
        assert_eq!(out.len(), 3);
        assert_eq!(
            (out[0].bucket_start, out[0].health.counts.delivered),
            (0, 2)
        );
        assert_eq!(
            (out[1].bucket_start, out[1].health.counts.dead),
            (BUCKET_MS, 1)
        );
        assert_eq!(out[2].health.latency.count(), 1);
        assert!(t.is_empty(), "taking empties it");
        assert_eq!(t.shard(), 3);
    }

    #[test]
    fn what_a_failed_write_took_comes_back_added_to_newer_counts() {
        let t = Tally::with_shard(0);
        t.add("a", 0, |h| h.counts.retrying += 2);
        let taken = t.take();
        t.add("a", 0, |h| h.counts.retrying += 1);
        t.restore(taken);
        let out = t.take();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].health.counts.retrying, 3);
    }

    #[test]
    fn a_random_shard_is_in_range() {
        assert!((0..SHARDS).contains(&Tally::new().shard()));
    }
}
