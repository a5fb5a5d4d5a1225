//! Usage counted from the log by the delivery consumer (see
//! `sluice_store::tally`): what each call read counts for, kept by offset
//! until the partition's committed position passes it, then summed per
//! (source, day) into one [`LogTally`] per partition and commit. Pure
//! bookkeeping; the consumer feeds it and stores what it answers.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use chrono::DateTime;

use sluice_store::log_record::LogRecord;
use sluice_store::{BlockedCount, DayCounts, LogTally};

/// The most counts a partition holds unstored (about 20 MB): past it, while
/// the store cannot be written, the oldest are given up, uncounted.
const MAX_HELD: usize = 200_000;

/// What one record counts for: small and cheap to make, since every call
/// read makes one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Count {
    source_id: Arc<str>,
    /// The UTC day it was accepted, in days since 1970-01-01.
    day: i64,
    /// API requests (1 on a request's first record).
    calls: u32,
    /// Calls accepted: 1, unless this one is a client's retry.
    events: u32,
    /// Retries dropped: this one, and its request's repeats.
    duplicates: u32,
    /// The event name, when a rule blocked the call.
    blocked: Option<Box<str>>,
}

const DAY_SECS: i64 = 86_400;

#[derive(Debug, Default)]
struct Part {
    /// Counted in the store up to here, or where this node started reading
    /// a partition never counted.
    from: i64,
    counts: BTreeMap<i64, Count>,
}

/// The counts of this node's partitions not yet stored.
#[derive(Debug, Default)]
pub(super) struct Tally {
    parts: HashMap<i32, Part>,
    /// Source ids, held once each.
    sources: HashSet<Arc<str>>,
}

impl Tally {
    /// A partition newly this node's, counted in the store up to `from`;
    /// or a refused tally's partition, starting again from where the store
    /// says. Counts below `from` are dropped.
    pub(super) fn start(&mut self, partition: i32, from: i64) {
        let part = self.parts.entry(partition).or_default();
        part.from = from;
        part.counts = part.counts.split_off(&from);
    }

    /// The call `record`, at `offset` of `partition`, was read; `retry`
    /// when it repeats a call read before, and is dropped.
    pub(super) fn read(&mut self, partition: i32, offset: i64, record: &LogRecord, retry: bool) {
        let source_id = match self.sources.get(record.source_id.as_str()) {
            Some(id) => id.clone(),
            None => {
                let id: Arc<str> = Arc::from(record.source_id.as_str());
                self.sources.insert(id.clone());
                id
            }
        };
        let count = Count {
            source_id,
            day: record.received_at.timestamp().div_euclid(DAY_SECS),
            calls: record.counts.calls,
            events: u32::from(!retry),
            duplicates: record.counts.duplicates + u32::from(retry),
            blocked: (record.blocked.as_ref())
                .filter(|_| !retry)
                .map(|b| b.event.as_str().into()),
        };
        self.note(partition, offset, count);
    }

    /// The record at `offset` counts for `count`. Below the counted
    /// position it was counted already; in a partition not started (taken
    /// away meanwhile) it is its new owner's to count. Either way it is
    /// ignored.
    fn note(&mut self, partition: i32, offset: i64, count: Count) {
        let Some(part) = self.parts.get_mut(&partition) else {
            return;
        };
        if offset >= part.from {
            part.counts.insert(offset, count);
        }
        if part.counts.len() > MAX_HELD
            && let Some((oldest, _)) = part.counts.pop_first()
        {
            part.from = oldest + 1;
        }
    }

    /// The tallies of the calls below each `(partition, position)` not yet
    /// stored; partitions that did not move are left out.
    pub(super) fn below(&self, positions: &[(i32, i64)]) -> Vec<LogTally> {
        positions
            .iter()
            .filter_map(|&(partition, upto)| {
                let part = self.parts.get(&partition)?;
                (part.from < upto).then(|| {
                    let counts = part.counts.range(..upto).map(|(_, c)| c);
                    sum(partition, part.from, upto, counts)
                })
            })
            .collect()
    }

    /// `tallies` are stored, but for the `refused` partitions' (whose
    /// consumer must [`Tally::start`] them again from the store).
    pub(super) fn stored(&mut self, tallies: &[LogTally], refused: &[i32]) {
        for t in tallies.iter().filter(|t| !refused.contains(&t.partition)) {
            self.start(t.partition, t.upto);
        }
    }

    /// Forgets partitions no longer this node's.
    pub(super) fn keep(&mut self, assigned: &[i32]) {
        self.parts.retain(|p, _| assigned.contains(p));
    }

    /// Forgets partitions taken away.
    pub(super) fn forget(&mut self, partitions: &[i32]) {
        self.parts.retain(|p, _| !partitions.contains(p));
    }
}

fn sum<'a>(
    partition: i32,
    from: i64,
    upto: i64,
    counts: impl Iterator<Item = &'a Count>,
) -> LogTally {
    let mut days: BTreeMap<(&str, i64), DayCounts> = BTreeMap::new();
    let mut blocked: BTreeMap<(&str, i64, &str), u64> = BTreeMap::new();
    for c in counts {
        let d = days.entry((&c.source_id, c.day)).or_default();
        d.api_calls += u64::from(c.calls);
        d.events += u64::from(c.events);
        d.duplicates += u64::from(c.duplicates);
        if let Some(event) = &c.blocked {
            *blocked.entry((&c.source_id, c.day, event)).or_default() += 1;
        }
    }
    LogTally {
        partition,
        from,
        upto,
        blocked: blocked
            .into_iter()
            .map(|((source_id, day, event), count)| BlockedCount {
                source_id: source_id.to_owned(),
                day: day_text(day),
                event: event.to_owned(),
                count,
            })
            .collect(),
        days: days
            .into_iter()
            .map(|((source_id, day), counts)| DayCounts {
                source_id: source_id.to_owned(),
                day: day_text(day),
                ..counts
            })
            .collect(),
    }
}

/// `YYYY-MM-DD` of a day counted from 1970-01-01.
fn day_text(day: i64) -> String {
    DateTime::from_timestamp(day.saturating_mul(DAY_SECS), 0)
        .unwrap_or_default()
        .format("%Y-%m-%d")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(calls: u32, events: u32, blocked: Option<&str>) -> Count {
        Count {
            source_id: "src_a".into(),
            // 2026-11-29.
            day: 20_786,
            calls,
            events,
            duplicates: 1 - events,
            blocked: blocked.map(Into::into),
        }
    }

    #[test]
    fn sums_the_calls_below_the_position_per_source_and_day() {
        let mut t = Tally::default();
        t.start(0, 10);
        t.note(0, 9, count(1, 1, None));
        t.note(0, 10, count(1, 1, None));
        t.note(0, 11, count(0, 1, Some("Spam")));
        t.note(0, 12, count(0, 0, None));
        t.note(0, 13, count(1, 1, None));
        let tallies = t.below(&[(0, 13)]);
        assert_eq!(tallies.len(), 1);
        let tally = &tallies[0];
        assert_eq!((tally.from, tally.upto), (10, 13), "9 was counted already");
        let d = &tally.days[0];
        assert_eq!(
            (d.source_id.as_str(), d.day.as_str()),
            ("src_a", "2026-11-29")
        );
        assert_eq!((d.api_calls, d.events, d.duplicates), (1, 2, 1));
        assert_eq!(tally.blocked[0].event, "Spam");
        assert_eq!(tally.blocked[0].count, 1);

        t.stored(&tallies, &[]);
        let next = t.below(&[(0, 14)]);
        assert_eq!((next[0].from, next[0].upto), (13, 14));
        assert_eq!(next[0].days[0].api_calls, 1, "only offset 13");
        assert!(t.below(&[(0, 13)]).is_empty(), "nothing new below 13");
    }

    #[test]
    fn counts_only_partitions_started_here() {
        let mut t = Tally::default();
        t.start(3, 40);
        t.note(3, 41, count(1, 1, None));
        t.note(3, 40, count(1, 1, None));
        t.note(4, 40, count(1, 1, None));
        let tallies = t.below(&[(3, 42), (4, 41)]);
        assert_eq!(tallies.len(), 1, "partition 4 is not this node's");
        assert_eq!(tallies[0].from, 40);
        assert_eq!(tallies[0].days[0].events, 2, "noted out of order");
    }

    #[test]
    fn a_refused_tally_starts_again_from_the_store() {
        let mut t = Tally::default();
        t.start(1, 0);
        for offset in 0..5 {
            t.note(1, offset, count(1, 1, None));
        }
        let tallies = t.below(&[(1, 5)]);
        t.stored(&tallies, &[1]);
        // Another node counted up to 3.
        t.start(1, 3);
        let again = t.below(&[(1, 5)]);
        assert_eq!((again[0].from, again[0].days[0].events), (3, 2));
    }
}
