//! Deliveries this node's ingest leased to the engine as it committed them
//! (`sluice_store::local`): taken between claims and during every wait, so
//! a call its node accepts goes out at once and without a claim.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use sluice_store::local::{Handed, LocalDelivery};
use tokio::sync::mpsc;

use super::Dispatcher;

/// This node's ingest's way in: the room it shares and the deliveries it
/// hands over.
pub(in crate::engine) struct FromIngest {
    pub(in crate::engine) local: Arc<LocalDelivery>,
    pub(in crate::engine) handed: mpsc::UnboundedReceiver<Vec<Handed>>,
}

impl Dispatcher {
    /// Lets ingest lease deliveries to this engine, or stops it.
    ///
    /// Open only while the engine has a sending permit for every delivery
    /// ingest may still lease it: claims take permits that ingest's room
    /// does not count, and a delivery handed over with no permit left
    /// would only be handed back (a write, and a wait for the next claim).
    pub(super) fn open_door(&self, open: bool) {
        if let Some(local) = &self.local {
            local.open(open && self.global.available_permits() >= local.room());
        }
    }

    /// Shuts the door to `destination` alone: its lane sends all it may.
    pub(super) fn close_for(&mut self, destination: &str) {
        let Some(local) = &self.local else {
            return;
        };
        if !self.busy.contains(destination) {
            self.busy.insert(destination.to_owned());
            local.set_busy(self.busy.clone());
        }
    }

    /// After a claim, tells ingest which destinations to leave to claims:
    /// those sending all they may, and those that handed back for want of
    /// room since their lane last emptied.
    pub(super) fn publish_busy(&mut self) {
        let Some(local) = &self.local else {
            return;
        };
        let per_dest = self.per_dest();
        let full = (self.lanes.iter())
            .filter(|(_, lane)| lane.held.load(Ordering::SeqCst) >= per_dest)
            .map(|(id, _)| id);
        let busy: HashSet<String> = self.saturated.iter().chain(full).cloned().collect();
        if busy != self.busy {
            local.set_busy(busy.clone());
            self.busy = busy;
        }
    }

    /// Dispatches the deliveries ingest handed over since the last look.
    pub(super) async fn take_handed(&mut self) {
        while let Some(Ok(batch)) = self.handed.as_mut().map(|rx| rx.try_recv()) {
            self.dispatch_handed(batch).await;
        }
    }

    pub(super) async fn dispatch_handed(&mut self, batch: Vec<Handed>) {
        let count = u64::try_from(batch.len()).unwrap_or(u64::MAX);
        self.signals.from_ingest.fetch_add(count, Ordering::Relaxed);
        for Handed { due, unit, since } in batch {
            self.dispatch(due, Some(unit), since).await;
        }
    }
}
