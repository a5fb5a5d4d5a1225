//! Which offsets of each partition may be committed.
//!
//! A consumer reads a partition's records in order but finishes them out
//! of order: sends to slow and fast destinations run at once. A
//! partition's committed offset says "every record before this one is dealt
//! with", so it may move only up to the oldest record still in flight. This
//! is the rule that makes `kill -9` of a consumer lose nothing: whoever
//! takes the partition over starts at the committed offset, and what it
//! reads again is at most the records in flight and those finished since
//! the last commit.
//!
//! Pure bookkeeping; the consumer feeds it and commits what it answers.

use std::collections::{BTreeMap, BTreeSet};

/// Offsets in flight and finished, per partition.
#[derive(Debug, Default)]
pub struct Watermarks {
    parts: BTreeMap<i32, Part>,
}

#[derive(Debug)]
struct Part {
    /// Read and not yet finished.
    in_flight: BTreeSet<i64>,
    /// One past the newest offset read.
    next: i64,
    /// The position last committed (or where reading started).
    committed: i64,
}

impl Part {
    /// The position that may be committed: the oldest offset in flight,
    /// else one past the newest read.
    fn position(&self) -> i64 {
        self.in_flight.first().copied().unwrap_or(self.next)
    }
}

impl Watermarks {
    /// A record was read and is now in flight. False when it already was:
    /// the partition was taken away and handed back before
    /// [`Watermarks::keep`] saw it go, and the client read it again from
    /// the last commit. The first read's send still owns that record, so
    /// the caller skips this one; finishing it here would let the position
    /// move past a send not yet done.
    #[must_use]
    pub fn read(&mut self, partition: i32, offset: i64) -> bool {
        let part = self.parts.entry(partition).or_insert(Part {
            in_flight: BTreeSet::new(),
            next: offset,
            committed: offset,
        });
        part.next = part.next.max(offset + 1);
        part.in_flight.insert(offset)
    }

    /// A record is dealt with: delivered, or durably handed to retry state.
    /// A partition no longer held is ignored.
    pub fn finished(&mut self, partition: i32, offset: i64) {
        if let Some(part) = self.parts.get_mut(&partition) {
            part.in_flight.remove(&offset);
        }
    }

    /// `(partition, position)` for each partition whose position moved
    /// past its last commit.
    pub fn to_commit(&self) -> Vec<(i32, i64)> {
        self.parts
            .iter()
            .filter(|(_, p)| p.position() > p.committed)
            .map(|(&id, p)| (id, p.position()))
            .collect()
    }

    /// Partitions about to be taken away: forgets them at once, and returns
    /// [`Watermarks::to_commit`] for them, the positions to commit before
    /// they go. Records of theirs still in flight finish unnoticed.
    pub fn release(&mut self, partitions: &[i32]) -> Vec<(i32, i64)> {
        let positions = self
            .to_commit()
            .into_iter()
            .filter(|(id, _)| partitions.contains(id))
            .collect();
        self.parts.retain(|id, _| !partitions.contains(id));
        positions
    }

    /// Whether `partition` is still this consumer's (read, and not
    /// released or dropped by [`Watermarks::keep`] since).
    pub fn holds(&self, partition: i32) -> bool {
        self.parts.contains_key(&partition)
    }

    /// `positions` (from [`Watermarks::to_commit`]) are committed.
    pub fn committed(&mut self, positions: &[(i32, i64)]) {
        for &(partition, position) in positions {
            if let Some(part) = self.parts.get_mut(&partition) {
                part.committed = part.committed.max(position);
            }
        }
    }

    /// Forgets partitions not in `assigned` (moved to another consumer):
    /// their records are the new owner's, from the last commit on.
    pub fn keep(&mut self, assigned: &[i32]) {
        self.parts.retain(|id, _| assigned.contains(id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partition_commits_up_to_its_oldest_record_in_flight() {
        let mut w = Watermarks::default();
        for offset in 10..15 {
            assert!(w.read(0, offset));
        }
        w.finished(0, 10);
        w.finished(0, 12);
        w.finished(0, 13);
        assert_eq!(w.to_commit(), vec![(0, 11)], "11 is still in flight");
        w.finished(0, 11);
        assert_eq!(w.to_commit(), vec![(0, 14)]);
        w.finished(0, 14);
        assert_eq!(w.to_commit(), vec![(0, 15)]);
    }

    #[test]
    fn nothing_is_committed_twice_or_backwards() {
        let mut w = Watermarks::default();
        assert!(w.read(3, 0));
        assert!(w.to_commit().is_empty(), "nothing finished yet");
        w.finished(3, 0);
        let positions = w.to_commit();
        assert_eq!(positions, vec![(3, 1)]);
        w.committed(&positions);
        assert!(w.to_commit().is_empty());
    }

    #[test]
    fn partitions_move_independently() {
        let mut w = Watermarks::default();
        assert!(w.read(1, 100));
        assert!(w.read(2, 7));
        w.finished(2, 7);
        assert_eq!(
            w.to_commit(),
            vec![(2, 8)],
            "partition 1 is still in flight"
        );
    }

    #[test]
    fn a_partition_taken_away_is_forgotten_and_starts_afresh_when_it_returns() {
        let mut w = Watermarks::default();
        assert!(w.read(5, 40));
        w.keep(&[1]);
        w.finished(5, 40);
        assert!(w.to_commit().is_empty());
        // Handed back: reading resumes at the committed offset.
        assert!(w.read(5, 38));
        w.finished(5, 38);
        assert_eq!(w.to_commit(), vec![(5, 39)]);
    }

    #[test]
    fn a_record_read_again_while_its_first_read_is_in_flight_is_not_new() {
        let mut w = Watermarks::default();
        assert!(w.read(4, 20));
        assert!(w.read(4, 21));
        w.finished(4, 21);
        // Handed back before `keep` ran: the client reads from 20 again.
        assert!(!w.read(4, 20), "20 is still being sent");
        assert!(w.read(4, 21), "21 was finished: a new send of it");
        w.finished(4, 21);
        assert!(w.to_commit().is_empty(), "20 holds the position");
        w.finished(4, 20);
        assert_eq!(w.to_commit(), vec![(4, 22)]);
    }

    #[test]
    fn a_partition_taken_away_commits_up_to_its_oldest_record_in_flight() {
        let mut w = Watermarks::default();
        for offset in 0..4 {
            assert!(w.read(1, offset));
            assert!(w.read(2, offset));
        }
        for offset in [0, 1, 3] {
            w.finished(1, offset);
            w.finished(2, offset);
        }
        assert_eq!(w.release(&[2, 9]), vec![(2, 2)]);
        assert!(!w.holds(2), "released at once");
        assert!(w.holds(1));
        w.finished(2, 2);
        assert_eq!(
            w.to_commit(),
            vec![(1, 2)],
            "a released partition commits nothing more"
        );
    }
}
