//! The dispatcher's waits: for room, for due work, for a wake-up. Each one
//! dispatches what ingest hands over meanwhile (`from_ingest`).

use std::future::Future;
use std::time::Duration;

use chrono::Utc;
use tokio::sync::watch;

use super::{Dispatcher, MIN_IDLE};

impl Dispatcher {
    /// How long to sleep: until the next due delivery, at most the poll interval.
    pub(super) async fn idle_wait(&self) -> Duration {
        let poll = self.config.poll_interval;
        match self.store.next_due().await {
            Ok(Some(at)) => (at - Utc::now())
                .to_std()
                .unwrap_or(Duration::ZERO)
                .clamp(MIN_IDLE, poll.max(MIN_IDLE)),
            Ok(None) => poll,
            Err(e) => {
                sluice_store::warn_every!(
                    sluice_store::log_gate::BACKGROUND_EVERY,
                    e,
                    "reading next due time failed"
                );
                poll
            }
        }
    }

    /// Sleeps for `wait` unless woken (ingest left deliveries to claim, a
    /// retry was written) or stopped.
    pub(super) async fn idle(&mut self, stop: &mut watch::Receiver<bool>, wait: Duration) {
        let wake = self.signals.wake.clone();
        self.wait(async {
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = wake.notified() => {}
                _ = stop.changed() => {}
            }
        })
        .await;
    }

    /// Waits until a send ends (room frees up), `until` passes (when given)
    /// or shutdown is asked for.
    pub(super) async fn wait_for_room(
        &mut self,
        stop: &mut watch::Receiver<bool>,
        until: Option<tokio::time::Instant>,
    ) {
        let freed = self.freed.clone();
        self.wait(async {
            let deadline = async {
                match until {
                    Some(until) => tokio::time::sleep_until(until).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = freed.notified() => {}
                _ = deadline => {}
                _ = stop.changed() => {}
            }
        })
        .await;
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
