//! Deliveries this node's ingest leased to the engine as it committed them
//! (`sluice_store::local`): taken between claims and during every wait, so
//! a call its node accepts goes out at once and without a claim.

use std::future::Future;
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

    async fn dispatch_handed(&mut self, batch: Vec<Handed>) {
        let count = u64::try_from(batch.len()).unwrap_or(u64::MAX);
        self.signals.from_ingest.fetch_add(count, Ordering::Relaxed);
        for Handed { due, unit } in batch {
            self.dispatch(due, Some(unit)).await;
        }
    }

    /// Waits for `until`, dispatching what ingest hands over meanwhile: a
    /// delivery leased at ingest goes out at once, and without a claim.
    pub(super) async fn wait(&mut self, until: impl Future<Output = ()>) {
        tokio::pin!(until);
        loop {
            let next = {
                let handed = &mut self.handed;
                let next = async move {
                    match handed {
                        Some(rx) => rx.recv().await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    _ = &mut until => return,
                    next = next => next,
                }
            };
            match next {
                Some(batch) => self.dispatch_handed(batch).await,
                None => self.handed = None,
            }
        }
    }
}
