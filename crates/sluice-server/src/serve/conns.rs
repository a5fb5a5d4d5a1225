//! Open client connections: what each is doing, and the connection cap.
//!
//! Every connection has a phase: idle (between requests), head (bytes of a
//! request head have arrived, the head is not complete) or busy (a request
//! is being handled). The phase and the time it began drive the head and
//! keep-alive timeouts, and choose whom to close at the cap: a connection
//! that never completed a request before one that did (a client's keep-alive
//! connection outlives a crowd of sockets that send nothing), then the one
//! idle or sending its head the longest. A busy connection is
//! never chosen, so requests in progress and their commits always finish,
//! and a new client (a health check, say) gets in even when every slot is
//! held by clients that send nothing.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::Notify;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Idle = 0,
    Head = 1,
    Busy = 2,
}

/// The shared state of one connection.
#[derive(Debug)]
pub struct ConnState {
    epoch: Instant,
    phase: AtomicU8,
    since_ms: AtomicU64,
    /// Set once the connection was chosen for closing.
    evicted: AtomicBool,
    /// Set once a request arrived on it.
    served: AtomicBool,
    pub evict: Notify,
}

impl ConnState {
    fn new(epoch: Instant) -> Self {
        let s = ConnState {
            epoch,
            phase: AtomicU8::new(Phase::Idle as u8),
            since_ms: AtomicU64::new(0),
            evicted: AtomicBool::new(false),
            served: AtomicBool::new(false),
            evict: Notify::new(),
        };
        s.since_ms.store(s.now_ms(), Ordering::Release);
        s
    }

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    pub fn phase(&self) -> Phase {
        match self.phase.load(Ordering::Acquire) {
            0 => Phase::Idle,
            1 => Phase::Head,
            _ => Phase::Busy,
        }
    }

    /// Milliseconds spent in the current phase.
    pub fn age_ms(&self) -> u64 {
        self.now_ms()
            .saturating_sub(self.since_ms.load(Ordering::Acquire))
    }

    pub fn set(&self, phase: Phase) {
        if phase == Phase::Busy {
            self.served.store(true, Ordering::Release);
        }
        self.since_ms.store(self.now_ms(), Ordering::Release);
        self.phase.store(phase as u8, Ordering::Release);
    }

    /// Bytes arrived: an idle connection has started a request head.
    pub fn saw_bytes(&self) {
        if self.phase.load(Ordering::Acquire) == Phase::Idle as u8 {
            self.since_ms.store(self.now_ms(), Ordering::Release);
            let _ = self.phase.compare_exchange(
                Phase::Idle as u8,
                Phase::Head as u8,
                Ordering::AcqRel,
                Ordering::Acquire,
            );
        }
    }
}

/// All open connections, and the cap.
pub struct Tracker {
    epoch: Instant,
    max: usize,
    next_id: AtomicU64,
    open: Mutex<HashMap<u64, Arc<ConnState>>>,
}

/// A connection's place in the [`Tracker`]; dropping it frees the place.
pub struct Registration {
    tracker: Arc<Tracker>,
    id: u64,
    pub state: Arc<ConnState>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.tracker.lock().remove(&self.id);
    }
}

impl Tracker {
    pub fn new(max: usize) -> Arc<Self> {
        Arc::new(Tracker {
            epoch: Instant::now(),
            max,
            next_id: AtomicU64::new(0),
            open: Mutex::new(HashMap::new()),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<ConnState>>> {
        match self.open.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    pub fn open_count(&self) -> usize {
        self.lock().len()
    }

    /// Takes a place for a new connection. At the cap, the connection idle
    /// the longest is told to close to make room; when every connection is
    /// busy, there is no room and `None` is returned.
    pub fn admit(self: &Arc<Self>) -> Option<Registration> {
        let mut open = self.lock();
        if open.len() >= self.max && !Self::evict_oldest(&open) {
            return None;
        }
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let state = Arc::new(ConnState::new(self.epoch));
        open.insert(id, state.clone());
        Some(Registration {
            tracker: self.clone(),
            id,
            state,
        })
    }

    /// Closes the connection idle the longest (after an accept error for
    /// want of descriptors, say). False when none is idle.
    pub fn evict_one(&self) -> bool {
        Self::evict_oldest(&self.lock())
    }

    fn evict_oldest(open: &HashMap<u64, Arc<ConnState>>) -> bool {
        let victim = open
            .values()
            .filter(|c| c.phase() != Phase::Busy && !c.evicted.load(Ordering::Acquire))
            .max_by_key(|c| (!c.served.load(Ordering::Acquire), c.age_ms()));
        match victim {
            Some(c) => {
                c.evicted.store(true, Ordering::Release);
                c.evict.notify_one();
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_the_cap_the_longest_idle_connection_makes_room() {
        let t = Tracker::new(2);
        let a = t.admit().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(5));
        let b = t.admit().unwrap();
        let _c = t.admit().expect("room made");
        assert!(a.state.evicted.load(Ordering::Acquire), "oldest chosen");
        assert!(!b.state.evicted.load(Ordering::Acquire));
    }

    #[test]
    fn connections_that_served_requests_are_closed_last() {
        let t = Tracker::new(2);
        let client = t.admit().unwrap();
        client.state.set(Phase::Busy);
        client.state.set(Phase::Idle);
        std::thread::sleep(std::time::Duration::from_millis(5));
        let silent = t.admit().unwrap();
        let _new = t.admit().expect("room made");
        assert!(silent.state.evicted.load(Ordering::Acquire));
        assert!(!client.state.evicted.load(Ordering::Acquire));
    }

    #[test]
    fn busy_connections_are_never_closed_for_room() {
        let t = Tracker::new(1);
        let a = t.admit().unwrap();
        a.state.set(Phase::Busy);
        assert!(t.admit().is_none(), "no room while all are busy");
        assert!(!a.state.evicted.load(Ordering::Acquire));
        drop(a);
        assert!(t.admit().is_some(), "place freed on drop");
    }

    #[test]
    fn bytes_on_an_idle_connection_start_a_head() {
        let t = Tracker::new(1);
        let a = t.admit().unwrap();
        a.state.saw_bytes();
        assert_eq!(a.state.phase(), Phase::Head);
        a.state.set(Phase::Busy);
        a.state.saw_bytes();
        assert_eq!(a.state.phase(), Phase::Busy, "body bytes change nothing");
    }
}
