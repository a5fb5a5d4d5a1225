//! Writes attempt reports to the store in groups: whatever has finished
//! while the previous write was running goes into the next `report` call,
//! so the store's group commit does the batching.

use std::sync::Arc;
use std::time::Duration;

use sluice_store::{AttemptReport, Outcome, Store};
use tokio::sync::{Notify, mpsc};

/// Most reports written in one call.
const MAX_GROUP: usize = 512;
/// Pauses between tries of a failing write; after the last one the group is
/// dropped and its deliveries come back when their leases end.
const RETRY_PAUSES: [Duration; 3] = [
    Duration::from_millis(50),
    Duration::from_millis(250),
    Duration::from_secs(1),
];

/// Runs until every sender of `rx` is gone and the queue is drained.
/// `wake` is poked after writing a retry so the dispatcher re-reads `next_due`.
pub(super) async fn run(
    store: Arc<dyn Store>,
    mut rx: mpsc::UnboundedReceiver<AttemptReport>,
    wake: Arc<Notify>,
) {
    while let Some(first) = rx.recv().await {
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok(report) => group.push(report),
                Err(_) => break,
            }
        }
        let has_retry = group
            .iter()
            .any(|r| matches!(r.outcome, Outcome::Retry { .. }));
        write(store.as_ref(), group).await;
        if has_retry {
            wake.notify_one();
        }
    }
}

async fn write(store: &dyn Store, group: Vec<AttemptReport>) {
    for pause in RETRY_PAUSES {
        match store.report(group.clone()).await {
            Ok(()) => return,
            Err(e) => {
                tracing::warn!(error = %e, reports = group.len(), "writing delivery reports failed");
                tokio::time::sleep(pause).await;
            }
        }
    }
    if let Err(e) = store.report(group).await {
        tracing::error!(error = %e, "dropping delivery reports; their leases will expire and they will be retried");
    }
}
