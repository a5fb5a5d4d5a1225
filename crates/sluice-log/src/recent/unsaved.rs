//! The keys read since a partition's last commit, kept until they are
//! saved below the offset the consumer commits. Pure.

use std::collections::{BTreeMap, VecDeque};

/// The keys of one partition saved as one slice: those read below `upto`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slice {
    /// The partition.
    pub partition: i32,
    /// The offset committed with this slice.
    pub upto: i64,
    /// When ingest accepted the newest of the calls (unix ms).
    pub newest_at: i64,
    /// Their keys, in offset order.
    pub keys: Vec<u64>,
}

/// Keys read and not yet saved, per partition, in offset order.
#[derive(Debug, Default)]
pub struct Unsaved {
    parts: BTreeMap<i32, VecDeque<(i64, i64, u64)>>,
}

impl Unsaved {
    /// The record at `offset` of `partition`, accepted at `at_ms`, has key
    /// `key`. Offsets of a partition come in increasing order.
    pub fn note(&mut self, partition: i32, offset: i64, at_ms: i64, key: u64) {
        self.parts
            .entry(partition)
            .or_default()
            .push_back((offset, at_ms, key));
    }

    /// For each `(partition, position)` about to be committed, the slice of
    /// keys noted below `position`; partitions with none are left out.
    pub fn below(&self, positions: &[(i32, i64)]) -> Vec<Slice> {
        positions
            .iter()
            .filter_map(|&(partition, upto)| {
                let noted = self.parts.get(&partition)?;
                let below: Vec<&(i64, i64, u64)> =
                    noted.iter().take_while(|(o, ..)| *o < upto).collect();
                let newest_at = below.iter().map(|(_, at, _)| *at).max()?;
                Some(Slice {
                    partition,
                    upto,
                    newest_at,
                    keys: below.iter().map(|(.., k)| *k).collect(),
                })
            })
            .collect()
    }

    /// `positions` are saved and committed: forgets the keys below them.
    pub fn saved(&mut self, positions: &[(i32, i64)]) {
        for &(partition, upto) in positions {
            if let Some(noted) = self.parts.get_mut(&partition) {
                while noted.front().is_some_and(|(o, ..)| *o < upto) {
                    noted.pop_front();
                }
            }
        }
    }

    /// Forgets partitions not in `assigned`: the new owner reads their
    /// unsaved calls again from the last commit.
    pub fn keep(&mut self, assigned: &[i32]) {
        self.parts.retain(|id, _| assigned.contains(id));
    }

    /// Forgets what was noted in `partition`.
    pub fn forget(&mut self, partition: i32) {
        self.parts.remove(&partition);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_keys_below_the_committed_position_are_saved() {
        let mut u = Unsaved::default();
        u.note(0, 10, 100, 1);
        u.note(0, 11, 300, 2);
        u.note(0, 12, 200, 3);
        u.note(1, 5, 50, 9);
        let slices = u.below(&[(0, 12), (2, 4)]);
        assert_eq!(
            slices,
            vec![Slice {
                partition: 0,
                upto: 12,
                newest_at: 300,
                keys: vec![1, 2]
            }],
            "12 is not below the position: it may still be in flight"
        );
        u.saved(&[(0, 12)]);
        assert_eq!(u.below(&[(0, 13)])[0].keys, vec![3]);
        u.keep(&[0]);
        assert!(u.below(&[(1, 6)]).is_empty(), "partition 1 moved away");
    }
}
