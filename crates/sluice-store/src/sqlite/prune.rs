//! Retention on SQLite: what it must spare, around the shared
//! `queries::deliveries::prune_chunk`.

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OptionalExtension};

use super::message_ids;
use super::rows::ms;
use crate::Result;
use crate::queries::deliveries::{self, Spare};
use crate::sql::sqlite::{Lite, ready};

/// Deletes up to `chunk` events received before `before` that have no
/// pending delivery, with their deliveries and attempts. Returns how many
/// events were deleted; fewer than `chunk` means nothing is left to prune.
///
/// The newest event and the event of the newest delivery are always kept:
/// seqs and delivery ids are rowids (max + 1), so keeping the maximum rows
/// is what guarantees they are never handed out twice.
///
/// There is no index on `received_at` (it cost every append a fourth
/// B-tree insert): events are stored in time order, give or take the few
/// milliseconds between a call's arrival and its commit and the profile
/// engine's messages prepared ahead (`schedule_ahead`, 60 s), so the
/// candidates are the events below [`time_boundary`], found by binary
/// search over seqs, each still checked against `before`. An event stored
/// after a newer one is pruned once the search passes it: at most that
/// offset late, never early.
pub(super) fn prune_chunk(conn: &Connection, before: DateTime<Utc>, chunk: u32) -> Result<u64> {
    let (lowest, highest): (Option<i64>, Option<i64>) =
        conn.query_row("SELECT min(seq), max(seq) FROM events", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })?;
    let (Some(lowest), Some(highest)) = (lowest, highest) else {
        return Ok(0);
    };
    let mut first_from = conn.prepare_cached(
        "SELECT seq, received_at FROM events WHERE seq >= ?1 ORDER BY seq LIMIT 1",
    )?;
    let old_below = time_boundary(lowest, highest.saturating_add(1), ms(before), |seq| {
        first_from
            .query_row([seq], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
    })?;
    let newest_delivery: Option<i64> = conn
        .prepare_cached("SELECT event_seq FROM deliveries ORDER BY id DESC LIMIT 1")?
        .query_row([], |r| r.get(0))
        .optional()?;
    let spare = Spare {
        // The newest event is never a candidate.
        below: Some(old_below.min(highest)),
        event: newest_delivery,
    };
    let pruned = ready(deliveries::prune_chunk(
        &mut Lite(conn),
        before,
        chunk,
        spare,
    ))?;
    if pruned.deleted > 0 {
        message_ids::forget_pruned(conn)?;
    }
    Ok(pruned.deleted)
}

/// The first seq in `[lo, hi)` from which, read as a time-ordered list, the
/// events were received at or after `before` (`hi` when none was). `first`
/// returns the first stored `(seq, received_at)` at or after a seq, so
/// gaps left by retention are skipped. About log2(hi − lo) lookups.
pub(super) fn time_boundary<E>(
    mut lo: i64,
    mut hi: i64,
    before: i64,
    mut first: impl FnMut(i64) -> std::result::Result<Option<(i64, i64)>, E>,
) -> std::result::Result<i64, E> {
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match first(mid)? {
            Some((seq, at)) if seq < hi && at < before => lo = seq + 1,
            _ => hi = mid,
        }
    }
    Ok(lo)
}

#[cfg(test)]
mod tests {
    use super::time_boundary;

    /// `time_boundary` over rows `(seq, received_at)` held in a vector.
    fn boundary(rows: &[(i64, i64)], before: i64) -> i64 {
        let lo = rows.first().map_or(0, |r| r.0);
        let hi = rows.last().map_or(0, |r| r.0 + 1);
        time_boundary(lo, hi, before, |seq| {
            Ok::<_, ()>(rows.iter().copied().find(|r| r.0 >= seq))
        })
        .unwrap_or(-1)
    }

    #[test]
    fn finds_the_first_event_at_or_after_the_cutoff() {
        let rows: Vec<(i64, i64)> = (1..=1000).map(|s| (s, s * 10)).collect();
        assert_eq!(boundary(&rows, 5_000), 500);
        assert_eq!(boundary(&rows, 5_001), 501);
        assert_eq!(boundary(&rows, 0), 1, "nothing is old");
        assert_eq!(boundary(&rows, 1_000_000), 1001, "everything is old");
        assert_eq!(boundary(&[], 10), 0, "an empty table");
    }

    #[test]
    fn skips_gaps_left_by_earlier_pruning() {
        let rows = [(3, 30), (4, 40), (90, 900), (91, 910), (500, 5000)];
        assert_eq!(boundary(&rows, 905), 91);
        // Any seq in the gap names the same events.
        assert!((5..=90).contains(&boundary(&rows, 100)));
        assert_eq!(boundary(&rows, 6000), 501);
    }

    #[test]
    fn an_event_prepared_ahead_only_holds_back_what_follows_it() {
        // Seq 50 was stored with a time 60 s ahead of its neighbours.
        let mut rows: Vec<(i64, i64)> = (1..=100).map(|s| (s, s * 1_000)).collect();
        rows[49].1 = 110_000;
        let b = boundary(&rows, 80_000);
        // Never past an event that is not old: everything below the
        // boundary either is old or is checked again against the cutoff.
        assert!(b <= 80, "{b}");
        assert!(
            rows.iter()
                .filter(|r| r.0 < b)
                .all(|r| r.1 < 80_000 || r.0 == 50)
        );
    }
}
