//! One destination's lane on this node: its send slots, how many of its
//! deliveries the node holds, its health and failure log.
//!
//! `concurrency_per_destination` is the whole deployment's limit: with
//! several nodes each takes an equal share ([`share`]), so a customer's
//! endpoint sees at most the configured number of requests at once however
//! many nodes send. A lane's slots follow the share as nodes come and go
//! ([`Lane::resize`]).

use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::sync::Semaphore;

use super::failure_log::FailureLog;
use super::health::Health;

/// Shared by the dispatcher and the lane's send tasks behind one `Arc`.
pub(super) struct Lane {
    pub slots: Semaphore,
    /// Deliveries held (sending or waiting for a slot).
    pub held: AtomicUsize,
    pub health: Health,
    pub log: FailureLog,
    /// Slots the semaphore has in all, taken or not. Changed by the
    /// dispatcher alone.
    size: AtomicUsize,
}

impl Lane {
    pub(super) fn new(slots: usize) -> Self {
        Lane {
            slots: Semaphore::new(slots),
            held: AtomicUsize::new(0),
            health: Health::default(),
            log: FailureLog::default(),
            size: AtomicUsize::new(slots),
        }
    }

    /// Brings the slots to `target`. Growing is immediate; shrinking takes
    /// free slots only, so sends in flight finish, and the rest is taken at
    /// later calls as they return theirs.
    pub(super) fn resize(&self, target: usize) {
        let size = self.size.load(Ordering::SeqCst);
        if target > size {
            self.slots.add_permits(target - size);
            self.size.store(target, Ordering::SeqCst);
        } else if target < size {
            let taken = self.slots.forget_permits(size - target);
            self.size.store(size - taken, Ordering::SeqCst);
        }
    }

    /// Sends in flight now.
    pub(super) fn in_flight(&self) -> usize {
        self.size
            .load(Ordering::SeqCst)
            .saturating_sub(self.slots.available_permits())
    }
}

/// One node's share of a deployment-wide limit among `nodes` live nodes:
/// an equal part, rounded down so that the parts never add up to more than
/// the limit, and at least 1 so that every node can send.
pub(super) fn share(limit: usize, nodes: usize) -> usize {
    (limit / nodes.max(1)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_is_split_evenly_and_never_exceeded() {
        assert_eq!(share(64, 1), 64);
        assert_eq!(share(64, 2), 32);
        assert_eq!(share(64, 3), 21);
        assert_eq!(share(64, 0), 64, "no membership yet counts as alone");
        assert_eq!(share(2, 3), 1, "every node keeps one slot");
    }

    #[test]
    fn resizing_grows_at_once_and_shrinks_as_slots_come_back() {
        let lane = Lane::new(4);
        let a = lane.slots.try_acquire().unwrap();
        let b = lane.slots.try_acquire().unwrap();
        let c = lane.slots.try_acquire().unwrap();
        lane.resize(1);
        assert_eq!(lane.slots.available_permits(), 0);
        assert_eq!(lane.in_flight(), 3, "sends in flight are not cut off");
        drop((a, b));
        lane.resize(1);
        assert_eq!(
            lane.slots.available_permits(),
            0,
            "returned slots are taken"
        );
        assert_eq!(lane.in_flight(), 1);
        drop(c);
        assert_eq!(lane.slots.available_permits(), 1);
        lane.resize(3);
        assert_eq!(lane.slots.available_permits(), 3);
    }
}
