//! Deliveries this node's ingest leased to the engine as it committed them
//! (`sluice_store::local`): taken between claims and during every wait, so
//! a call its node accepts goes out at once and without a claim.

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
    pub(super) fn open_door(&self, open: bool) {
        if let Some(local) = &self.local {
            local.open(open);
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
        for Handed { due, unit } in batch {
            self.dispatch(due, Some(unit)).await;
        }
    }
}
