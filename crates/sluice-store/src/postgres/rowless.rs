//! Deliveries handed to this node's engine at ingest with no row of their
//! own until their outcome: on the happy path a delivered call costs the
//! database two row writes, its event and its settled delivery, instead of
//! an insert, a lease and an update.
//!
//! # Invariants
//! - **The event names what it handed.** A handed delivery's id comes from
//!   the deliveries' sequence at ingest, and its event row carries
//!   `handed_by` (this node) and `handed` ("id:destination" pairs, space
//!   separated), written by the ingest insert itself. Whoever finds such a
//!   delivery without a row writes it as pending, due at once
//!   ([`restore`]): the row it would have had, had ingest written it.
//! - **Written once.** The report of a handed delivery inserts its row in
//!   the state the report gives (`delivery::report`), `ON CONFLICT (id) DO
//!   NOTHING`; a row that is already there (restored meanwhile) takes the
//!   report as a claimed row does. Restores conflict the same way, so a
//!   delivery gets one row, whoever writes first.
//! - **The floor.** Every event this node handed with a seq below its
//!   `nodes.handed_from` has all its rows. The heartbeat writes the floor
//!   ([`Rowless::floor`]): the lowest seq of a delivery handed without a
//!   row and not yet reported, or, when there is none, of a group being
//!   written, or else one past the highest seq given out when this node
//!   last looked (its own groups' seqs, and the sequence's value each beat
//!   reads). A group registers before it reserves its seqs, and the
//!   sequence only grows, so no later group of this node can get a seq
//!   below a floor already written.
//! - **Handed only while the heartbeat is recent.** A node hands
//!   deliveries without a row only within half a time-to-live of the start
//!   of a heartbeat that landed; otherwise ingest leases rows as a claim
//!   would ([`super::leased`]). Before its first beat a node has no row the
//!   others could find, and once its beats fail the others restore what it
//!   handed only once, at the silence they see: a delivery handed later
//!   would have nobody to restore it. Half a time-to-live leaves the group
//!   that decided to hand the other half to commit before the others can
//!   count the node as silent.
//! - **Restored when its node is gone.** A node that finds another silent
//!   restores that node's handed deliveries from its floor on
//!   (`ClusterStore::release_leases`): one range of the events' primary
//!   key, from the floor to the end. The restore clears the floor, and a
//!   membership row is forgotten only once its floor is clear, so no
//!   silent row's deliveries are dropped with it.
//! - **Restored when overdue.** A handed delivery whose report has not
//!   committed within the engine's lease is restored by its own node
//!   ([`Rowless::overdue`]), as a claimed row's lease would end: a report
//!   that failed for good, a delivery the engine dropped, a group whose
//!   `COMMIT` went unanswered.
//!
//! # Not handed without a row
//! A delivery with a body of its own (a destination's transform) keeps the
//! leased row of [`super::leased`]: the event row cannot rebuild it.
//!
//! # Recovery
//! Nothing to rebuild at start: a restarted node has a new id, and the
//! others restore what the old one held once its row falls silent.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use deadpool_postgres::GenericClient;

use super::rows::{backend, get};
use crate::Result;

/// Version 27: what an event handed at ingest, and each node's floor.
pub(super) const SCHEMA: &str = "
ALTER TABLE events ADD COLUMN handed_by text, ADD COLUMN handed text;
ALTER TABLE nodes ADD COLUMN handed_from bigint;
";

/// A handed delivery not reported yet.
#[derive(Debug, Clone)]
pub(super) struct Held {
    pub seq: i64,
    pub destination: String,
    since: Instant,
}

#[derive(Default)]
struct State {
    /// The highest event seq this node has been given.
    last_seq: i64,
    /// Floors of the groups being written, by token.
    groups: BTreeMap<u64, i64>,
    next_token: u64,
    held: HashMap<i64, Held>,
    /// Until when this node's last heartbeat counts as recent.
    beating_until: Option<Instant>,
}

/// This node's handed deliveries without a row (see the module notes).
#[derive(Default)]
pub(super) struct Rowless {
    state: Mutex<State>,
    /// The engine's lease: how long a handed delivery waits for its report.
    lease: OnceLock<Duration>,
}

/// A group's place in the floor, from before its seqs are reserved until
/// its handed deliveries are held (or it failed).
pub(super) struct GroupFloor<'a> {
    rowless: &'a Rowless,
    token: u64,
}

impl Drop for GroupFloor<'_> {
    fn drop(&mut self) {
        self.rowless.state().groups.remove(&self.token);
    }
}

/// Whether a destination id can be written in `events.handed`.
pub(super) fn encodable(destination: &str) -> bool {
    !destination.is_empty() && !destination.contains([' ', ':'])
}

/// `events.handed` for the deliveries `(id, destination)` of one event.
pub(super) fn encode<'a>(handed: impl IntoIterator<Item = (i64, &'a str)>) -> String {
    let mut out = String::new();
    for (id, destination) in handed {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&id.to_string());
        out.push(':');
        out.push_str(destination);
    }
    out
}

impl Rowless {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts the floor past `last_seq`, the sequence's value at open.
    pub(super) fn start_after(&self, last_seq: i64) {
        let mut s = self.state();
        s.last_seq = s.last_seq.max(last_seq);
    }

    /// A heartbeat sent at `sent` landed: this node's row counts as alive
    /// for `ttl` from about then, and its deliveries go without a row for
    /// half of that.
    pub(super) fn beat(&self, sent: Instant, ttl: Duration) {
        let mut s = self.state();
        let until = sent + ttl / 2;
        s.beating_until = Some(s.beating_until.map_or(until, |u| u.max(until)));
    }

    /// Whether the last heartbeat is recent enough to hand deliveries
    /// without a row (see the module notes).
    pub(super) fn beating(&self) -> bool {
        self.state()
            .beating_until
            .is_some_and(|until| Instant::now() < until)
    }

    pub(super) fn set_lease(&self, lease: Duration) {
        let _ = self.lease.set(lease);
    }

    /// Registers a group about to reserve its seqs.
    pub(super) fn group(&self) -> GroupFloor<'_> {
        let mut s = self.state();
        let token = s.next_token;
        s.next_token += 1;
        let floor = s.last_seq + 1;
        s.groups.insert(token, floor);
        GroupFloor {
            rowless: self,
            token,
        }
    }

    /// The seqs reserved reach `seq`.
    pub(super) fn saw(&self, seq: i64) {
        let mut s = self.state();
        s.last_seq = s.last_seq.max(seq);
    }

    /// Holds `(id, seq, destination)`: handed, committed (or maybe
    /// committed), no row yet.
    pub(super) fn hold(&self, handed: impl IntoIterator<Item = (i64, i64, String)>) {
        let since = Instant::now();
        let mut s = self.state();
        for (id, seq, destination) in handed {
            s.held.insert(
                id,
                Held {
                    seq,
                    destination,
                    since,
                },
            );
        }
    }

    /// Those of `ids` held without a row.
    pub(super) fn held(&self, ids: impl IntoIterator<Item = i64>) -> HashMap<i64, Held> {
        let s = self.state();
        ids.into_iter()
            .filter_map(|id| s.held.get(&id).map(|h| (id, h.clone())))
            .collect()
    }

    /// `ids` have their rows now.
    pub(super) fn written(&self, ids: impl IntoIterator<Item = i64>) {
        let mut s = self.state();
        for id in ids {
            s.held.remove(&id);
        }
    }

    /// The floor the heartbeat writes (see the module notes).
    pub(super) fn floor(&self) -> i64 {
        let s = self.state();
        let groups = s.groups.values().copied().min();
        let held = s.held.values().map(|h| h.seq).min();
        [groups, held]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(s.last_seq + 1)
    }

    /// Held deliveries whose report has not come within the lease; all of
    /// them with `everything`.
    pub(super) fn overdue(&self, everything: bool) -> Vec<(i64, i64)> {
        let lease = self.lease.get().copied().unwrap_or(Duration::MAX);
        let s = self.state();
        s.held
            .iter()
            .filter(|(_, h)| everything || h.since.elapsed() >= lease)
            .map(|(id, h)| (*id, h.seq))
            .collect()
    }
}

/// The sequence's last value given out, at open.
pub(super) async fn last_seq(c: &impl GenericClient) -> Result<i64> {
    let row = c
        .query_one(
            "SELECT CASE WHEN is_called THEN last_value ELSE last_value - 1 END FROM events_seq",
            &[],
        )
        .await
        .map_err(backend)?;
    get(&row, 0)
}

/// The pairs of `events.handed`, as rows `h(id, dest)`.
const PAIRS: &str = "CROSS JOIN LATERAL (
        SELECT split_part(p, ':', 1)::bigint AS id, substr(p, strpos(p, ':') + 1) AS dest
        FROM unnest(string_to_array(e.handed, ' ')) AS p) h";

/// Writes the rows of `handed` = `(id, seq)`, handed by `node`, as pending
/// deliveries due at once, unless they have rows. Returns how many of them
/// their events name: fewer when a group rolled back or a purge took them.
pub(super) async fn restore(
    c: &impl GenericClient,
    node: &str,
    handed: &[(i64, i64)],
) -> Result<u64> {
    let (ids, seqs): (Vec<i64>, Vec<i64>) = handed.iter().copied().unzip();
    let sql = format!(
        "WITH h AS (
             SELECT h.id, e.seq, h.dest, e.source_id, e.received_at
             FROM events e {PAIRS}
             WHERE e.seq = ANY($1) AND e.handed_by = $2 AND h.id = ANY($3)
         ), ins AS (
             INSERT INTO deliveries (id, event_seq, destination_id, source_id, state, attempts,
                                     next_attempt_at, updated_at)
             SELECT id, seq, dest, source_id, 'pending', 0, received_at, received_at FROM h
             ON CONFLICT (id) DO NOTHING
         )
         SELECT count(*) FROM h"
    );
    let row = c
        .query_one(&sql, &[&seqs, &node, &ids])
        .await
        .map_err(backend)?;
    Ok(u64::try_from(get::<i64>(&row, 0)?).unwrap_or(0))
}

/// Writes the missing rows of everything `nodes` handed from their floors
/// on (they are silent), and clears their floors: a row whose floor is
/// set is never forgotten (`cluster.rs`), so a node's handed deliveries
/// are restored even when nobody ran while its row aged past forgetting
/// (a lone node restarted a quarter of an hour after a crash). Returns
/// the rows written.
pub(super) async fn restore_silent(c: &impl GenericClient, nodes: &[String]) -> Result<u64> {
    // The rows are locked, so a beat of one of them (alive after all)
    // lands after this and writes its floor again.
    let sql = format!(
        "WITH n AS (
             SELECT id, handed_from FROM nodes
             WHERE id = ANY($1) AND handed_from IS NOT NULL
             FOR UPDATE
         ), ins AS (
             INSERT INTO deliveries (id, event_seq, destination_id, source_id, state, attempts,
                                     next_attempt_at, updated_at)
             SELECT h.id, e.seq, h.dest, e.source_id, 'pending', 0, e.received_at, e.received_at
             FROM n JOIN events e ON e.seq >= n.handed_from AND e.handed_by = n.id {PAIRS}
             ON CONFLICT (id) DO NOTHING
             RETURNING 1
         ), done AS (
             UPDATE nodes SET handed_from = NULL FROM n WHERE nodes.id = n.id
         )
         SELECT count(*) FROM ins"
    );
    let row = c.query_one(&sql, &[&nodes]).await.map_err(backend)?;
    Ok(u64::try_from(get::<i64>(&row, 0)?).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hands_without_a_row_only_within_half_a_ttl_of_a_beat_that_landed() {
        let rowless = Rowless::default();
        assert!(!rowless.beating(), "no beat yet");
        let ttl = Duration::from_secs(8);
        rowless.beat(Instant::now(), ttl);
        assert!(rowless.beating());
        let long_ago = Instant::now()
            .checked_sub(ttl)
            .expect("an instant a ttl ago");
        let stale = Rowless::default();
        stale.beat(long_ago, ttl);
        assert!(!stale.beating(), "a beat sent a ttl ago is not recent");
        // A late answer to an older beat does not shorten a newer one.
        rowless.beat(long_ago, ttl);
        assert!(rowless.beating());
    }

    #[test]
    fn floor_is_past_the_last_seq_when_nothing_is_held() {
        let r = Rowless::default();
        r.start_after(41);
        assert_eq!(r.floor(), 42);
        r.saw(50);
        assert_eq!(r.floor(), 51);
    }

    #[test]
    fn a_group_keeps_the_floor_below_the_seqs_it_reserves() {
        let r = Rowless::default();
        r.start_after(10);
        let g = r.group();
        r.saw(20);
        assert_eq!(r.floor(), 11);
        r.hold([(7, 15, "dst_a".to_owned())]);
        drop(g);
        assert_eq!(r.floor(), 15);
        r.written([7]);
        assert_eq!(r.floor(), 21);
    }

    #[test]
    fn the_sequence_read_at_a_beat_lifts_an_idle_floor_but_not_past_a_group() {
        let r = Rowless::default();
        r.start_after(10);
        let g = r.group();
        r.saw(1000);
        assert_eq!(r.floor(), 11, "the group may still get any seq above 10");
        drop(g);
        assert_eq!(r.floor(), 1001);
    }

    #[test]
    fn only_held_ids_are_reported_as_rowless() {
        let r = Rowless::default();
        r.hold([(1, 5, "dst_a".to_owned()), (2, 5, "dst_b".to_owned())]);
        let held = r.held([2, 3]);
        assert_eq!(held.len(), 1);
        assert_eq!(held[&2].destination, "dst_b");
    }

    #[test]
    fn nothing_is_overdue_before_the_lease_is_known_unless_everything_is_asked() {
        let r = Rowless::default();
        r.hold([(1, 5, "dst_a".to_owned())]);
        assert!(r.overdue(false).is_empty());
        assert_eq!(r.overdue(true), vec![(1, 5)]);
        let r = Rowless::default();
        r.set_lease(Duration::ZERO);
        r.hold([(1, 5, "dst_a".to_owned())]);
        assert_eq!(r.overdue(false), vec![(1, 5)]);
    }

    #[test]
    fn handed_pairs_are_written_as_the_restore_reads_them() {
        assert_eq!(encode([(12, "dst_a"), (13, "dst_b")]), "12:dst_a 13:dst_b");
        assert!(encodable("dst_AbC123"));
        assert!(!encodable("a b"));
        assert!(!encodable("a:b"));
        assert!(!encodable(""));
    }
}
