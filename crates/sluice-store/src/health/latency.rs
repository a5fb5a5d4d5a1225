//! A compact latency histogram: fixed log-scale buckets, so histograms of
//! different minutes and nodes merge by adding counts, and a percentile
//! read from the merged one is as good as one read from the samples.
//!
//! Bucket 0 holds 0 ms; bucket `i ≥ 1` holds `[2^((i-1)/2), 2^(i/2))` ms,
//! two buckets per doubling (a factor of √2), up to bucket
//! [`LATENCY_BUCKETS`]` - 1`, which holds everything from 2^16 ms (65.5 s)
//! up. A percentile is interpolated within its bucket, so it is off by at
//! most the bucket's width: under 42 % of the value, and usually much less.

/// How many buckets a histogram has.
pub const LATENCY_BUCKETS: usize = 34;

/// Counts of latencies per bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Latency(pub [u64; LATENCY_BUCKETS]);

impl Default for Latency {
    fn default() -> Self {
        Latency([0; LATENCY_BUCKETS])
    }
}

/// The bucket `ms` falls in.
pub fn bucket_of(ms: u64) -> usize {
    if ms == 0 {
        return 0;
    }
    let floor_log2 = 63 - ms.leading_zeros() as usize;
    // The upper half of [2^b, 2^(b+1)) starts at 2^b·√2: ms² ≥ 2^(2b+1).
    let upper_half = u128::from(ms) * u128::from(ms) >= 1u128 << (2 * floor_log2 + 1);
    (1 + 2 * floor_log2 + usize::from(upper_half)).min(LATENCY_BUCKETS - 1)
}

/// The smallest latency bucket `i` holds, in milliseconds.
pub fn lower_bound(i: usize) -> f64 {
    if i == 0 {
        0.0
    } else {
        2f64.powf((i as f64 - 1.0) / 2.0)
    }
}

impl Latency {
    /// Counts one latency.
    pub fn record(&mut self, ms: u64) {
        self.0[bucket_of(ms)] += 1;
    }

    /// Adds `other`'s counts to this one's.
    pub fn merge(&mut self, other: &Latency) {
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a = a.saturating_add(*b);
        }
    }

    /// How many latencies were counted.
    pub fn count(&self) -> u64 {
        self.0.iter().sum()
    }

    /// The latency below which a share `q` (0 to 1) of the counted ones
    /// lie, in whole milliseconds, interpolated within its bucket; `None`
    /// when nothing was counted. The last bucket has no upper end: its
    /// lower bound is the answer.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        let total = self.count();
        if total == 0 {
            return None;
        }
        let rank = (q.clamp(0.0, 1.0) * total as f64).ceil().max(1.0);
        let mut below = 0u64;
        for (i, &n) in self.0.iter().enumerate() {
            if n == 0 {
                continue;
            }
            if (below + n) as f64 >= rank {
                let lo = lower_bound(i);
                if i == 0 || i == LATENCY_BUCKETS - 1 {
                    return Some(lo.round() as u64);
                }
                let hi = lower_bound(i + 1);
                let within = (rank - below as f64) / n as f64;
                // A bucket holds whole milliseconds only: never answer
                // past the largest one it can hold.
                let top = (hi.ceil() - 1.0).max(lo);
                return Some((lo + (hi - lo) * within).min(top).round() as u64);
            }
            below += n;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_doubling_has_two_buckets() {
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(1), 1);
        assert_eq!(bucket_of(2), 3);
        assert_eq!(bucket_of(3), 4);
        assert_eq!(bucket_of(4), 5);
        assert_eq!(bucket_of(5), 5);
        assert_eq!(bucket_of(6), 6);
        assert_eq!(bucket_of(1000), 20);
        assert_eq!(bucket_of(65_535), 32);
        assert_eq!(bucket_of(65_536), 33);
        assert_eq!(bucket_of(u64::MAX), LATENCY_BUCKETS - 1);
    }

    #[test]
    fn every_latency_lies_within_its_bucket() {
        for ms in (1..70_000).step_by(7) {
            let i = bucket_of(ms);
            assert!(lower_bound(i) <= ms as f64 + 1e-9, "{ms} in {i}");
            if i + 1 < LATENCY_BUCKETS {
                assert!((ms as f64) < lower_bound(i + 1), "{ms} in {i}");
            }
        }
    }

    #[test]
    fn percentiles_of_one_value_are_that_value() {
        let mut h = Latency::default();
        for _ in 0..10 {
            h.record(120);
        }
        let p = h.quantile(0.5).unwrap();
        assert!((91..=128).contains(&p), "{p}");
        assert_eq!(Latency::default().quantile(0.5), None);
    }

    #[test]
    fn percentiles_stay_within_a_bucket_of_the_true_value() {
        let mut h = Latency::default();
        for ms in 1..=1000 {
            h.record(ms);
        }
        let p50 = h.quantile(0.5).unwrap() as f64;
        let p95 = h.quantile(0.95).unwrap() as f64;
        assert!((500.0 / 1.42..=500.0 * 1.42).contains(&p50), "{p50}");
        assert!((950.0 / 1.42..=950.0 * 1.42).contains(&p95), "{p95}");
        assert!(p50 < p95);
    }

    #[test]
    fn merged_histograms_answer_as_one_fed_every_sample() {
        let (mut a, mut b, mut all) = (Latency::default(), Latency::default(), Latency::default());
        for ms in [3, 40, 41, 900, 5] {
            a.record(ms);
            all.record(ms);
        }
        for ms in [7, 7, 2000, 0] {
            b.record(ms);
            all.record(ms);
        }
        a.merge(&b);
        assert_eq!(a, all);
        assert_eq!(a.count(), 9);
        assert_eq!(a.quantile(0.95), all.quantile(0.95));
    }

    #[test]
    fn the_open_bucket_answers_its_lower_bound() {
        let mut h = Latency::default();
        h.record(600_000);
        assert_eq!(h.quantile(0.95), Some(65_536));
        let mut z = Latency::default();
        z.record(0);
        assert_eq!(z.quantile(0.5), Some(0));
    }
}
