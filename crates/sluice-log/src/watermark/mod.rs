//! Which offsets of each partition may be committed.
//!
//! A consumer reads a partition's records in order but finishes them out
//! of order: sends to slow and fast destinations run at once. A
//! partition's committed offset says "every record before this one is dealt
//! with", so it may move only up to the oldest record still open. This is
//! the rule that makes `kill -9` of a consumer lose nothing: whoever takes
//! the partition over starts at the committed offset.
//!
//! Beside the offset goes the list of records past it that are dealt with
//! too ([`done`]), so the next owner skips them and sends again only the
//! records that were open: in flight, or not yet started.
//!
//! - [`done`]: that list, as commit metadata. Pure.
//!
//! Pure bookkeeping; the consumer feeds it and commits what it answers.

pub mod done;

use std::collections::BTreeMap;

/// Offsets open and finished, per partition.
#[derive(Debug, Default)]
pub struct Watermarks {
    parts: BTreeMap<i32, Part>,
}

/// A partition's position to commit: every record before `offset` is
/// dealt with, and so are those past it that `metadata` says are
/// ([`done`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position {
    /// The partition.
    pub partition: i32,
    /// The offset to commit.
    pub offset: i64,
    /// The commit's metadata.
    pub metadata: String,
}

/// What a record just read is to this consumer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Read {
    /// Not dealt with: the caller sends it, then calls
    /// [`Watermarks::finished`].
    New,
    /// [`Read::New`], of a record the partition's last owner had read and
    /// not finished by its last commit ([`Watermarks::inherit`]): it may
    /// have been sent there already.
    Again,
    /// Read before and still being sent: the client read it again after
    /// the partition was handed back. The first read's send owns it;
    /// finishing it here would let the position move past that send.
    InFlight,
    /// Dealt with already, here or by the partition's earlier owner.
    Done,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    /// Open at the last owner, not read here yet.
    Owed,
    /// Read here, not finished.
    Sending,
}

#[derive(Debug)]
struct Part {
    /// Offsets below `next` not yet dealt with.
    open: BTreeMap<i64, Open>,
    /// One past the newest offset known (read here, or spoken for by the
    /// inherited metadata).
    next: i64,
    /// The position and metadata last committed (or where reading started).
    committed: (i64, String),
}

impl Part {
    fn starting_at(offset: i64) -> Part {
        Part {
            open: BTreeMap::new(),
            next: offset,
            committed: (offset, String::new()),
        }
    }

    /// The offset that may be committed: the oldest open, else one past
    /// the newest known.
    fn offset(&self) -> i64 {
        self.open.keys().next().copied().unwrap_or(self.next)
    }

    fn position(&self, partition: i32) -> Position {
        let offset = self.offset();
        Position {
            partition,
            offset,
            metadata: done::encode(offset, self.next, self.open.keys().copied()),
        }
    }
}

impl Watermarks {
    /// A partition is newly this consumer's, and its group committed
    /// `offset` with `metadata`: the records past `offset` that metadata
    /// lists as done will be skipped; answers how many. Metadata Sluice did
    /// not write is ignored (those records are sent again).
    pub fn inherit(&mut self, partition: i32, offset: i64, metadata: &str) -> i64 {
        let mut part = Part::starting_at(offset);
        let mut skipped = 0;
        if let Some(known) = done::decode(metadata) {
            skipped = known.span - i64::try_from(known.open.len()).unwrap_or(known.span);
            part.next = offset.saturating_add(known.span);
            part.open = known
                .open
                .into_iter()
                .map(|rel| (offset + rel, Open::Owed))
                .collect();
            part.committed.1 = metadata.to_owned();
        }
        self.parts.insert(partition, part);
        skipped
    }

    /// A record was read: whether to send it.
    pub fn read(&mut self, partition: i32, offset: i64) -> Read {
        let part = self
            .parts
            .entry(partition)
            .or_insert_with(|| Part::starting_at(offset));
        if offset >= part.next {
            // Offsets skipped on the way are not records (compaction,
            // transaction markers): nothing to deal with.
            part.next = offset + 1;
            part.open.insert(offset, Open::Sending);
            return Read::New;
        }
        match part.open.get_mut(&offset) {
            Some(state @ Open::Owed) => {
                *state = Open::Sending;
                Read::Again
            }
            Some(Open::Sending) => Read::InFlight,
            None => Read::Done,
        }
    }

    /// A record is dealt with: delivered, or durably handed to retry state.
    /// A partition no longer held is ignored.
    pub fn finished(&mut self, partition: i32, offset: i64) {
        if let Some(part) = self.parts.get_mut(&partition) {
            part.open.remove(&offset);
        }
    }

    /// The position of each partition that moved since its last commit.
    pub fn to_commit(&self) -> Vec<Position> {
        self.parts
            .iter()
            .map(|(&id, p)| p.position(id))
            .filter(|pos| {
                let committed = &self.parts[&pos.partition].committed;
                pos.offset > committed.0
                    || (pos.offset == committed.0 && pos.metadata != committed.1)
            })
            .collect()
    }

    /// Partitions about to be taken away: forgets them at once, and returns
    /// [`Watermarks::to_commit`] for them, the positions to commit before
    /// they go. Records of theirs still in flight finish unnoticed.
    pub fn release(&mut self, partitions: &[i32]) -> Vec<Position> {
        let positions = self
            .to_commit()
            .into_iter()
            .filter(|p| partitions.contains(&p.partition))
            .collect();
        self.parts.retain(|id, _| !partitions.contains(id));
        positions
    }

    /// Whether `partition` is still this consumer's (inherited or read,
    /// and not released or dropped by [`Watermarks::keep`] since).
    pub fn holds(&self, partition: i32) -> bool {
        self.parts.contains_key(&partition)
    }

    /// `positions` (from [`Watermarks::to_commit`]) are committed.
    pub fn committed(&mut self, positions: &[Position]) {
        for pos in positions {
            if let Some(part) = self.parts.get_mut(&pos.partition)
                && pos.offset >= part.committed.0
            {
                part.committed = (pos.offset, pos.metadata.clone());
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

    fn offsets(positions: &[Position]) -> Vec<(i32, i64)> {
        positions.iter().map(|p| (p.partition, p.offset)).collect()
    }

    #[test]
    fn a_partition_commits_up_to_its_oldest_record_in_flight() {
        let mut w = Watermarks::default();
        for offset in 10..15 {
            assert_eq!(w.read(0, offset), Read::New);
        }
        w.finished(0, 10);
        w.finished(0, 12);
        w.finished(0, 13);
        assert_eq!(offsets(&w.to_commit()), vec![(0, 11)], "11 is open");
        w.finished(0, 11);
        assert_eq!(offsets(&w.to_commit()), vec![(0, 14)]);
        w.finished(0, 14);
        assert_eq!(
            w.to_commit(),
            vec![Position {
                partition: 0,
                offset: 15,
                metadata: String::new()
            }]
        );
    }

    #[test]
    fn the_records_finished_past_the_position_go_in_its_metadata() {
        let mut w = Watermarks::default();
        for offset in 10..15 {
            assert_eq!(w.read(0, offset), Read::New);
        }
        for offset in [12, 13] {
            w.finished(0, offset);
        }
        let positions = w.to_commit();
        assert_eq!(offsets(&positions), vec![(0, 10)]);
        let known = done::decode(&positions[0].metadata).unwrap();
        assert_eq!(known.span, 5);
        assert_eq!(known.open.into_iter().collect::<Vec<_>>(), vec![0, 1, 4]);
    }

    #[test]
    fn a_new_owner_skips_what_the_last_one_finished_and_sends_the_rest() {
        let mut before = Watermarks::default();
        for offset in 10..15 {
            assert_eq!(before.read(0, offset), Read::New);
        }
        for offset in [11, 13] {
            before.finished(0, offset);
        }
        let handed = before.release(&[0]).remove(0);

        let mut after = Watermarks::default();
        after.inherit(0, handed.offset, &handed.metadata);
        assert!(after.to_commit().is_empty(), "nothing new to commit yet");
        let reads: Vec<Read> = (10..16).map(|o| after.read(0, o)).collect();
        use Read::{Again, Done, New};
        assert_eq!(reads, vec![Again, Done, Again, Done, Again, New]);
        for offset in [10, 12, 14] {
            after.finished(0, offset);
        }
        assert_eq!(offsets(&after.to_commit()), vec![(0, 15)], "15 is open");
    }

    #[test]
    fn metadata_of_another_writer_skips_nothing() {
        let mut w = Watermarks::default();
        w.inherit(2, 50, "checkpoint 7");
        assert_eq!(w.read(2, 50), Read::New);
        assert_eq!(w.read(2, 51), Read::New);
    }

    #[test]
    fn nothing_is_committed_twice_or_backwards() {
        let mut w = Watermarks::default();
        assert_eq!(w.read(3, 0), Read::New);
        assert!(w.to_commit().is_empty(), "nothing finished yet");
        w.finished(3, 0);
        let positions = w.to_commit();
        assert_eq!(offsets(&positions), vec![(3, 1)]);
        w.committed(&positions);
        assert!(w.to_commit().is_empty());
    }

    #[test]
    fn partitions_move_independently() {
        let mut w = Watermarks::default();
        assert_eq!(w.read(1, 100), Read::New);
        assert_eq!(w.read(2, 7), Read::New);
        w.finished(2, 7);
        assert_eq!(
            offsets(&w.to_commit()),
            vec![(2, 8)],
            "partition 1 is still in flight"
        );
    }

    #[test]
    fn a_partition_taken_away_is_forgotten_and_starts_afresh_when_it_returns() {
        let mut w = Watermarks::default();
        assert_eq!(w.read(5, 40), Read::New);
        w.keep(&[1]);
        w.finished(5, 40);
        assert!(w.to_commit().is_empty());
        // Handed back: reading resumes at the committed offset.
        assert_eq!(w.read(5, 38), Read::New);
        w.finished(5, 38);
        assert_eq!(offsets(&w.to_commit()), vec![(5, 39)]);
    }

    #[test]
    fn a_record_read_again_while_its_first_read_is_in_flight_is_not_new() {
        let mut w = Watermarks::default();
        assert_eq!(w.read(4, 20), Read::New);
        assert_eq!(w.read(4, 21), Read::New);
        w.finished(4, 21);
        // Handed back before `keep` ran: the client reads from 20 again.
        assert_eq!(w.read(4, 20), Read::InFlight, "20 is still being sent");
        assert_eq!(w.read(4, 21), Read::Done, "21 was finished");
        assert_eq!(w.read(4, 22), Read::New);
        w.finished(4, 22);
        assert_eq!(offsets(&w.to_commit()), vec![(4, 20)], "20 holds it");
        w.finished(4, 20);
        assert_eq!(offsets(&w.to_commit()), vec![(4, 23)]);
    }

    #[test]
    fn a_partition_taken_away_commits_up_to_its_oldest_record_in_flight() {
        let mut w = Watermarks::default();
        for offset in 0..4 {
            assert_eq!(w.read(1, offset), Read::New);
            assert_eq!(w.read(2, offset), Read::New);
        }
        for offset in [0, 1, 3] {
            w.finished(1, offset);
            w.finished(2, offset);
        }
        assert_eq!(offsets(&w.release(&[2, 9])), vec![(2, 2)]);
        assert!(!w.holds(2), "released at once");
        assert!(w.holds(1));
        w.finished(2, 2);
        assert_eq!(
            offsets(&w.to_commit()),
            vec![(1, 2)],
            "a released partition commits nothing more"
        );
    }
}
