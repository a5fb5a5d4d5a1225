//! The ingest writer and its group commit.
//!
//! One tokio task takes `append` calls from a channel. It drains every call
//! already queued (up to the configured bounds), writes them all in ONE
//! transaction with multi-row statements (see `ingest::append_batch`),
//! commits, and only then answers each caller. So:
//! - a group costs one commit (one WAL flush on the server) and a fixed
//!   handful of statements, shared by every caller in it;
//! - no caller hears "ok" before its events are committed;
//! - when a group fails before `COMMIT` (say one request carries a value the
//!   server rejects), each request is retried alone, so one bad request never
//!   fails its neighbours;
//! - when `COMMIT` itself fails, the outcome is unknown and every caller in
//!   the group hears the error (retrying could store events twice); the
//!   deliveries it leased to this node are released for claims
//!   (`leased::release_unanswered`).
//!
//! Only ingest is grouped: administrative writes, claims and reports take
//! their own pooled connection and transaction.
//!
//! [`Writer::ingested`] counts the events appended, for the profile engine's
//! pacing (see `sluice_profiles::engine::pace`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use deadpool_postgres::Pool;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use super::ingest::{BatchError, GroupOptions, append_batch};
use super::leased::Local;
use super::rowless::Rowless;
use crate::error::ErrorKind;
use crate::local::LocalDelivery;
use crate::{AppendRequest, Appended, Result, StoreError};

/// How many calls may wait for the writer before callers wait to enqueue.
const QUEUE_DEPTH: usize = 4096;

/// Bounds of one group commit.
#[derive(Debug, Clone, Copy)]
pub(super) struct GroupLimits {
    pub max_events: usize,
    pub max_jobs: usize,
    pub max_bytes: usize,
    /// The deduplication window (`dedup`); `None` stores every call.
    pub dedup_window: Option<Duration>,
    /// This node's usage counter rows (see `ingest::GroupOptions`).
    pub usage_shard: i32,
}

/// Handle to the writer task; cheap to call from many tasks.
pub(super) struct Writer {
    queue: mpsc::Sender<Msg>,
    task: Mutex<Option<JoinHandle<()>>>,
    /// Events handed to this writer so far (committed or not).
    ingested: AtomicU64,
    /// This node's delivery engine, once it takes deliveries from ingest.
    local: Arc<OnceLock<Arc<LocalDelivery>>>,
}

struct Job {
    request: AppendRequest,
    reply: oneshot::Sender<Result<Appended>>,
}

enum Msg {
    Append(Job),
    /// Stop taking calls; finish the queued ones; exit.
    Close,
}

impl Writer {
    /// Starts the writer task on the current tokio runtime; `node` owns
    /// the deliveries it leases to this node's engine.
    pub(super) fn spawn(
        pool: Pool,
        limits: GroupLimits,
        node: String,
        rowless: Arc<Rowless>,
    ) -> Writer {
        let (queue, rx) = mpsc::channel(QUEUE_DEPTH);
        let local = Arc::new(OnceLock::new());
        let task = tokio::spawn(writer_loop(pool, rx, limits, local.clone(), node, rowless));
        Writer {
            queue,
            task: Mutex::new(Some(task)),
            ingested: AtomicU64::new(0),
            local,
        }
    }

    /// Leases the deliveries of later groups to `local`'s engine (see
    /// `leased`); false when an engine was already given.
    pub(super) fn deliver_locally(&self, local: Arc<LocalDelivery>) -> bool {
        self.local.set(local).is_ok()
    }

    /// Events appended through this writer so far (monotonic).
    pub(super) fn ingested(&self) -> u64 {
        self.ingested.load(Ordering::Relaxed)
    }

    /// Appends `request` in the next group and returns once it is committed.
    pub(super) async fn append(&self, request: AppendRequest) -> Result<Appended> {
        let events = request.events.len().max(1) as u64;
        self.ingested.fetch_add(events, Ordering::Relaxed);
        let (reply, answer) = oneshot::channel();
        self.queue
            .send(Msg::Append(Job { request, reply }))
            .await
            .map_err(|_| StoreError::Closed)?;
        answer.await.map_err(|_| StoreError::Closed)?
    }

    /// Commits every queued call, then stops the task and waits for it.
    /// Later calls fail with [`StoreError::Closed`].
    pub(super) async fn close(&self) {
        // A send error means the task is already gone: nothing to drain.
        let _ = self.queue.send(Msg::Close).await;
        let task = self
            .task
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(task) = task
            && let Err(e) = task.await
        {
            tracing::error!(error = %e, "postgres writer task failed");
        }
    }
}

async fn writer_loop(
    pool: Pool,
    mut rx: mpsc::Receiver<Msg>,
    limits: GroupLimits,
    local: Arc<OnceLock<Arc<LocalDelivery>>>,
    node: String,
    rowless: Arc<Rowless>,
) {
    let mut group: Vec<Job> = Vec::new();
    while let Some(first) = rx.recv().await {
        let mut closing = false;
        let (mut events, mut bytes) = (0, 0);
        let mut next = Some(first);
        while let Some(msg) = next.take() {
            match msg {
                Msg::Append(job) => {
                    events += job.request.events.len().max(1);
                    bytes += job
                        .request
                        .events
                        .iter()
                        .map(|e| e.body.len())
                        .sum::<usize>();
                    group.push(job);
                }
                Msg::Close => closing = true,
            }
            let room = events < limits.max_events
                && bytes < limits.max_bytes
                && group.len() < limits.max_jobs;
            if room {
                next = rx.try_recv().ok();
            }
        }
        let opts = GroupOptions {
            window: limits.dedup_window,
            usage_shard: limits.usage_shard,
            usage: true,
        };
        let local = local.get().map(|delivery| Local {
            delivery,
            node: &node,
            rowless: &rowless,
        });
        commit_group(&pool, &mut group, opts, local).await;
        if closing {
            // Refuse new calls; the loop still drains what is queued.
            rx.close();
        }
    }
}

/// Writes `group` in one transaction and answers every caller.
async fn commit_group(
    pool: &Pool,
    group: &mut Vec<Job>,
    opts: GroupOptions,
    local: Option<Local<'_>>,
) {
    if group.is_empty() {
        return;
    }
    let requests: Vec<&AppendRequest> = group.iter().map(|j| &j.request).collect();
    let outcome = append_batch(pool, &requests, opts, local).await;
    match outcome {
        Ok(outcomes) => {
            for (job, outcome) in group.drain(..).zip(outcomes) {
                let _ = job.reply.send(Ok(outcome));
            }
        }
        Err(BatchError::Unknown(e)) => {
            tracing::error!(error = %e, calls = group.len(), "postgres group commit failed");
            let (kind, text) = (e.kind().unwrap_or(ErrorKind::Internal), e.to_string());
            answer_all(group, || Err(StoreError::backend(kind, text.clone())));
        }
        Err(BatchError::NotWritten(e)) if group.len() == 1 => {
            if let Some(job) = group.pop() {
                let _ = job.reply.send(Err(e));
            }
        }
        Err(BatchError::NotWritten(e)) => {
            tracing::warn!(error = %e, calls = group.len(), "postgres group failed; retrying calls one by one");
            for job in group.drain(..) {
                let alone = match append_batch(pool, &[&job.request], opts, local).await {
                    Ok(outcomes) => Ok(outcomes.into_iter().next().unwrap_or_default()),
                    Err(BatchError::NotWritten(e) | BatchError::Unknown(e)) => Err(e),
                };
                // The caller may have given up waiting; its data is committed anyway.
                let _ = job.reply.send(alone);
            }
        }
    }
}

fn answer_all(group: &mut Vec<Job>, answer: impl Fn() -> Result<Appended>) {
    for job in group.drain(..) {
        let _ = job.reply.send(answer());
    }
}
