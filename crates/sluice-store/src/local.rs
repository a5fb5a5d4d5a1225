//! [`LocalDelivery`]: deliveries a node's ingest leases to its own delivery
//! engine as it commits them, handed over in memory instead of claimed.
//!
//! On the happy path a call is delivered at once by the node that accepted
//! it. Claiming it from the store first costs a statement and a commit for
//! every call, and makes every node's engine meet at the head of one due
//! order. So the ingest writer stores a call's delivery rows already leased
//! to this node (the same lease a claim takes) and, after the commit, hands
//! them to the engine over a channel. Nothing else changes for the rows: a
//! report settles them as it settles claimed ones, and a node that dies
//! with them leased leaves them to the membership and lease expiry, as a
//! claim would. (PostgreSQL goes further and writes most of them only with
//! their outcome: `postgres::rowless`.)
//!
//! # Room
//! The engine says how many deliveries it can take ([`LocalDelivery::open`]
//! and the units it holds). Ingest leases at most that many
//! ([`LocalDelivery::take`]); the rest of a group's rows are left unleased,
//! for claims. Each delivery handed over carries a [`Unit`] of that room,
//! which returns when the engine is done with it (sent, handed back or
//! dropped). A group that fails gives its units back.
//!
//! While the engine drains a backlog it closes the door: due rows go out
//! oldest first through claims, and a fresh call does not jump the queue.
//! A destination with no free sending slot is closed on its own
//! ([`LocalDelivery::set_busy`]): a call for it would wait in the engine,
//! or be handed back, a write more than the claim it saved. Its rows are
//! left for claims, and calls for every other destination still come
//! straight through.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use crate::DueDelivery;

/// The shared room and channel between one node's ingest and its engine.
#[derive(Debug)]
pub struct LocalDelivery {
    /// Deliveries the engine can still take from ingest.
    room: AtomicUsize,
    /// False while the engine takes its work through claims (see the
    /// module notes).
    open: AtomicBool,
    /// How long a row leased at ingest stays the engine's: its claims' lease.
    lease: Duration,
    /// Destinations the engine takes no deliveries of from ingest now.
    busy: Mutex<Arc<HashSet<String>>>,
    handed: mpsc::UnboundedSender<Vec<Handed>>,
}

/// A delivery leased at ingest, and the unit of room it occupies.
#[derive(Debug)]
pub struct Handed {
    pub due: DueDelivery,
    pub unit: Unit,
    /// When its room was taken, before its lease was written: the lease
    /// runs from no earlier than this.
    pub since: Instant,
}

/// One delivery's share of the engine's room: given back when dropped.
#[derive(Debug)]
pub struct Unit(Arc<LocalDelivery>);

impl Drop for Unit {
    fn drop(&mut self) {
        self.0.room.fetch_add(1, Ordering::AcqRel);
    }
}

/// Units taken for one group's rows, and the deliveries leased with them;
/// the units not handed over return when it is dropped (the group failed,
/// or had fewer rows than taken).
#[derive(Debug)]
pub struct Taken {
    local: Option<Arc<LocalDelivery>>,
    count: usize,
    due: Vec<DueDelivery>,
    /// When the units were taken: set whenever there are any.
    since: Option<Instant>,
    /// The busy destinations when the units were taken.
    busy: Arc<HashSet<String>>,
}

impl LocalDelivery {
    /// Room for `room` deliveries at once, each leased for `lease`,
    /// initially open; the receiver is the engine's end.
    pub fn new(
        room: usize,
        lease: Duration,
    ) -> (Arc<LocalDelivery>, mpsc::UnboundedReceiver<Vec<Handed>>) {
        let (handed, rx) = mpsc::unbounded_channel();
        let local = LocalDelivery {
            room: AtomicUsize::new(room),
            open: AtomicBool::new(true),
            lease,
            busy: Mutex::default(),
            handed,
        };
        (Arc::new(local), rx)
    }

    /// Opens or closes the door to ingest (see the module notes).
    pub fn open(&self, open: bool) {
        self.open.store(open, Ordering::Release);
    }

    /// Sets the destinations whose deliveries the engine does not take
    /// from ingest (see the module notes).
    pub fn set_busy(&self, busy: HashSet<String>) {
        *self.busy.lock().unwrap_or_else(PoisonError::into_inner) = Arc::new(busy);
    }

    /// Takes a unit of room for each of `destinations` (a group's rows)
    /// that is not busy, as far as the room goes: none while closed or when
    /// the engine has stopped listening.
    pub fn take<'a>(self: &Arc<Self>, destinations: impl IntoIterator<Item = &'a str>) -> Taken {
        if !self.open.load(Ordering::Acquire) || self.handed.is_closed() {
            return Taken::none();
        }
        let busy = Arc::clone(&self.busy.lock().unwrap_or_else(PoisonError::into_inner));
        let want = destinations
            .into_iter()
            .filter(|id| !busy.contains(*id))
            .count();
        if want == 0 {
            return Taken::none();
        }
        let mut count = 0;
        let _ = self
            .room
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |room| {
                count = room.min(want);
                Some(room - count)
            });
        Taken {
            local: Some(Arc::clone(self)),
            count,
            due: Vec::with_capacity(count),
            since: Some(Instant::now()),
            busy,
        }
    }

    /// How long rows leased at ingest stay this node's.
    pub fn lease(&self) -> Duration {
        self.lease
    }

    /// Units free right now (for tests and metrics).
    pub fn room(&self) -> usize {
        self.room.load(Ordering::Acquire)
    }
}

impl Taken {
    /// No units: nothing is leased at ingest.
    pub fn none() -> Taken {
        Taken {
            local: None,
            count: 0,
            due: Vec::new(),
            since: None,
            busy: Arc::default(),
        }
    }

    /// How many rows may be leased to the engine.
    pub fn count(&self) -> usize {
        self.count
    }

    /// Whether another row may be leased.
    pub fn has_room(&self) -> bool {
        self.due.len() < self.count
    }

    /// Whether the engine takes `destination`'s deliveries from ingest
    /// (room aside).
    pub fn open_for(&self, destination: &str) -> bool {
        !self.busy.contains(destination)
    }

    /// Whether a row for `destination` may be leased now.
    pub fn takes(&self, destination: &str) -> bool {
        self.has_room() && self.open_for(destination)
    }

    /// Keeps at most `need` units not leased yet and gives the rest back
    /// (a call of the group turned out to be a duplicate, so fewer rows
    /// are left to lease): another group may take them before this one
    /// commits.
    pub fn keep_for(&mut self, need: usize) {
        let spare = (self.count - self.due.len()).saturating_sub(need);
        if let (Some(local), 1..) = (&self.local, spare) {
            self.count -= spare;
            local.room.fetch_add(spare, Ordering::AcqRel);
        }
    }

    /// Keeps `due`, a row leased to this node, for the hand-over.
    pub fn lease(&mut self, due: DueDelivery) {
        if self.has_room() {
            self.due.push(due);
        }
    }

    /// The rows leased so far.
    pub fn leased(&self) -> usize {
        self.due.len()
    }

    /// The ids of the deliveries leased so far.
    pub fn delivery_ids(&self) -> Vec<i64> {
        self.due.iter().map(|d| d.delivery_id).collect()
    }

    /// Hands the leased deliveries, now committed, to the engine, each with
    /// its unit, in the order of their ids. Returns the ids of those it
    /// could not hand over because the engine has stopped (a group that
    /// took its room just before): they stay leased to this node, and the
    /// caller releases them for claims.
    #[must_use = "deliveries not handed over stay leased until released"]
    pub fn hand(mut self) -> Vec<i64> {
        let Some(local) = self.local.clone() else {
            return Vec::new();
        };
        let mut due = std::mem::take(&mut self.due);
        due.sort_by_key(|d| d.delivery_id);
        let handed: Vec<Handed> = due
            .into_iter()
            .map(|due| Handed {
                due,
                unit: Unit(Arc::clone(&local)),
                since: self.since.unwrap_or_else(Instant::now),
            })
            .collect();
        self.count -= handed.len();
        if handed.is_empty() {
            return Vec::new();
        }
        // A closed channel hands the batch back; dropping it gives the
        // room back.
        match local.handed.send(handed) {
            Ok(()) => Vec::new(),
            Err(mpsc::error::SendError(back)) => back.iter().map(|h| h.due.delivery_id).collect(),
        }
    }
}

impl Drop for Taken {
    fn drop(&mut self) {
        if let Some(local) = &self.local {
            local.room.fetch_add(self.count, Ordering::AcqRel);
        }
    }
}

#[cfg(test)]
mod tests {
    use chrono::Utc;

    use super::*;

    const LEASE: Duration = Duration::from_secs(60);

    fn due(id: i64) -> DueDelivery {
        DueDelivery {
            delivery_id: id,
            destination_id: "d".into(),
            event_seq: id,
            message_id: format!("m{id}"),
            event_body: "{}".into(),
            attempts: 0,
            first_attempt_at: None,
            received_at: Utc::now(),
        }
    }

    /// `n` rows, all for destination "d".
    fn rows(n: usize) -> Vec<&'static str> {
        vec!["d"; n]
    }

    #[test]
    fn takes_no_more_than_the_room_left() {
        let (local, _rx) = LocalDelivery::new(3, LEASE);
        let first = local.take(rows(2));
        let second = local.take(rows(5));
        assert_eq!((first.count(), second.count(), local.room()), (2, 1, 0));
    }

    #[test]
    fn a_group_that_fails_gives_its_units_back() {
        let (local, _rx) = LocalDelivery::new(4, LEASE);
        drop(local.take(rows(3)));
        assert_eq!(local.room(), 4);
    }

    #[test]
    fn each_handed_delivery_returns_its_unit_when_done() {
        let (local, mut rx) = LocalDelivery::new(4, LEASE);
        let mut taken = local.take(rows(3));
        taken.lease(due(1));
        taken.lease(due(2));
        assert!(taken.hand().is_empty());
        // The third unit was not used, so it came back at once.
        assert_eq!(local.room(), 2);
        let handed = rx.try_recv().unwrap_or_default();
        assert_eq!(handed.len(), 2);
        drop(handed);
        assert_eq!(local.room(), 4);
    }

    #[test]
    fn a_handed_delivery_carries_when_its_room_was_taken() {
        let (local, mut rx) = LocalDelivery::new(2, LEASE);
        let before = Instant::now();
        let mut taken = local.take(rows(1));
        let after_take = Instant::now();
        taken.lease(due(1));
        std::thread::sleep(Duration::from_millis(20));
        assert!(taken.hand().is_empty());
        let handed = rx.try_recv().unwrap_or_default();
        let since = handed.first().map(|h| h.since);
        // The engine measures the lease from here, not from when it looks.
        assert!(
            since.is_some_and(|s| before <= s && s <= after_take),
            "{since:?}"
        );
    }

    #[test]
    fn a_closed_door_or_a_stopped_engine_takes_nothing() {
        let (local, rx) = LocalDelivery::new(4, LEASE);
        local.open(false);
        assert_eq!(local.take(rows(2)).count(), 0);
        local.open(true);
        drop(rx);
        assert_eq!(local.take(rows(2)).count(), 0);
        assert_eq!(local.room(), 4);
    }

    #[test]
    fn deliveries_for_an_engine_that_stopped_after_the_take_come_back_by_id() {
        let (local, rx) = LocalDelivery::new(4, LEASE);
        let mut taken = local.take(rows(2));
        taken.lease(due(7));
        taken.lease(due(3));
        drop(rx);
        assert_eq!(taken.hand(), [3, 7]);
        assert_eq!(local.room(), 4);
    }

    #[test]
    fn units_given_back_are_free_before_the_group_commits() {
        let (local, _rx) = LocalDelivery::new(4, LEASE);
        let mut taken = local.take(rows(3));
        taken.lease(due(1));
        taken.keep_for(1);
        assert_eq!(
            (taken.count(), local.room()),
            (2, 2),
            "one leased, one kept"
        );
        taken.keep_for(5);
        assert_eq!(taken.count(), 2, "never takes more");
        taken.keep_for(0);
        assert_eq!(
            (taken.count(), local.room()),
            (1, 3),
            "the leased one stays"
        );
        assert!(!taken.has_room());
        drop(taken);
        assert_eq!(local.room(), 4);
    }

    #[test]
    fn takes_no_room_for_a_busy_destination_and_leases_none_of_its_rows() {
        let (local, _rx) = LocalDelivery::new(4, LEASE);
        local.set_busy(HashSet::from(["slow".to_owned()]));
        let taken = local.take(["slow", "d", "slow", "d"]);
        assert_eq!((taken.count(), local.room()), (2, 2));
        assert!(!taken.takes("slow") && taken.takes("d"));
        assert_eq!(local.take(["slow"]).count(), 0);
        local.set_busy(HashSet::new());
        assert!(local.take(["slow"]).takes("slow"), "open again");
    }
}
