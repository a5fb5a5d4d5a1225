//! The single writer and its group commit.
//!
//! One OS thread owns the read-write connection. Callers send it jobs (a
//! closure and a reply channel). The thread takes every job already queued,
//! up to the configured bounds, runs them in ONE transaction, commits, and
//! only then answers each caller. So:
//! - a group costs one `COMMIT` (one fsync under `synchronous = FULL`),
//!   shared by every caller in it: the cost per request falls as load rises;
//! - a job that fails rolls back to its savepoint; the rest commit. Each
//!   job has a savepoint of its own, except that consecutive ingest appends
//!   share one: a savepoint copies every page a job is first to touch into
//!   its journal, which for appends (the tail pages of the same tables,
//!   again and again) cost 3-4 % of ingest CPU (BENCHMARKS.md, "Measured
//!   choices"). An append fails only when the database does (I/O error,
//!   disk full); the appends before it in its run are then rolled back
//!   with it and answered with an error, so their callers answer 5xx and
//!   clients send again: nothing acknowledged is lost, nothing half-written
//!   commits;
//! - no caller hears "ok" before its data is committed;
//! - if the commit itself fails, every job in the group hears the error.
//!
//! Jobs have a [`Class`]. [`Writer::load`] reads how many events ingest has
//! appended and how long the writer has been busy with work other than the
//! profile engine's; the profile engine takes rates from two readings to
//! step aside while others need the writer (see
//! `sluice_profiles::engine::pace`).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::Connection;
use tokio::sync::{mpsc, oneshot};

mod group;

use super::checkpoint::Checkpointer;
use super::dedup::Shared;
use super::lock::ProcessLock;
use crate::error::ErrorKind;
use crate::{Result, StoreError, WriteLoad};
use group::commit_group;

/// How many jobs may wait for the writer before callers wait to enqueue.
const QUEUE_DEPTH: usize = 4096;

/// Bounds of one group commit.
#[derive(Debug, Clone, Copy)]
pub(super) struct GroupLimits {
    /// Total job weight (events for appends, 1 for other jobs).
    pub max_weight: usize,
    pub max_jobs: usize,
}

/// Handle to the writer thread; cheap to call from many tasks.
pub(super) struct Writer {
    queue: mpsc::Sender<Msg>,
    thread: Mutex<Option<JoinHandle<()>>>,
    counters: Arc<Counters>,
}

/// What [`Writer::load`] reads, kept by the writer thread.
#[derive(Default)]
struct Counters {
    /// Events appended by ingest jobs so far.
    ingested: AtomicU64,
    /// Microseconds the writer spent on groups, less the profile engine's
    /// jobs in them.
    foreground_micros: AtomicU64,
}

/// What a job is, for [`Writer::load`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Class {
    /// Appends from the ingest path.
    Ingest,
    /// The profile engine's steps: background work the others come before.
    Engine,
    /// Everything else: administration, delivery.
    Other,
}

enum Msg {
    Job(Box<dyn Job>),
    /// Stop taking jobs; finish the queued ones; exit.
    Close,
}

impl Writer {
    /// Starts the writer thread owning `conn`; it nudges `checkpointer`
    /// after commits and stops it on exit, and holds `lock` until then. It
    /// commits or undoes the journal of `window` with each group.
    pub(super) fn spawn(
        conn: Connection,
        checkpointer: Checkpointer,
        limits: GroupLimits,
        lock: ProcessLock,
        window: Option<Shared>,
    ) -> Result<Writer> {
        let (queue, rx) = mpsc::channel(QUEUE_DEPTH);
        let counters = Arc::new(Counters::default());
        let counted = counters.clone();
        let thread = std::thread::Builder::new()
            .name("sluice-sqlite-writer".into())
            .spawn(move || {
                // Held until the last write is done (`lock`).
                let _lock = lock;
                writer_loop(conn, rx, checkpointer, limits, &counted, window.as_ref());
            })
            .map_err(|e| StoreError::internal(format!("spawn writer thread: {e}")))?;
        Ok(Writer {
            queue,
            thread: Mutex::new(Some(thread)),
            counters,
        })
    }

    /// The writer's totals so far (monotonic).
    pub(super) fn load(&self) -> WriteLoad {
        WriteLoad {
            events: self.counters.ingested.load(Ordering::Relaxed),
            foreground: Duration::from_micros(
                self.counters.foreground_micros.load(Ordering::Relaxed),
            ),
        }
    }

    /// As [`Writer::run`], for a job of the given class.
    pub(super) async fn run_as<T, F>(&self, class: Class, weight: usize, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        self.submit(weight, class, work, None).await
    }

    /// As [`Writer::run_as`]; `then` runs on the writer thread once the
    /// group has committed, on the job's result, before the caller is
    /// answered and whether or not it still waits for the answer (a caller
    /// that timed out). What must follow every commit goes there.
    pub(super) async fn run_as_then<T, F>(
        &self,
        class: Class,
        weight: usize,
        work: F,
        then: fn(&mut T),
    ) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        self.submit(weight, class, work, Some(then)).await
    }

    /// Runs `work` in the next group commit and returns its result once the
    /// group is committed. `weight` is the number of rows of ingest it writes
    /// (1 for small administrative jobs).
    pub(super) async fn run<T, F>(&self, weight: usize, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        self.submit(weight, Class::Other, work, None).await
    }

    async fn submit<T, F>(
        &self,
        weight: usize,
        class: Class,
        work: F,
        then: Option<fn(&mut T)>,
    ) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job = Box::new(PendingJob {
            work: Some(work),
            outcome: None,
            reply,
            weight: weight.max(1),
            class,
            then,
        });
        self.queue
            .send(Msg::Job(job))
            .await
            .map_err(|_| StoreError::Closed)?;
        answer.await.map_err(|_| StoreError::Closed)?
    }

    /// Finishes every queued job, stops the thread and waits for it.
    /// Later calls fail with [`StoreError::Closed`].
    pub(super) async fn close(&self) {
        // A send error means the thread is already gone: nothing to drain.
        let _ = self.queue.send(Msg::Close).await;
        let handle = self
            .thread
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        let Some(handle) = handle else { return };
        match tokio::task::spawn_blocking(move || handle.join()).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) => tracing::error!("sqlite writer thread panicked"),
            Err(e) => tracing::error!(error = %e, "sqlite writer thread could not be joined"),
        }
    }
}

/// A unit of work as the writer thread sees it, type-erased.
trait Job: Send {
    fn weight(&self) -> usize;
    fn class(&self) -> Class;
    /// Runs the work on `conn`; returns whether it succeeded.
    fn run(&mut self, conn: &Connection) -> bool;
    /// Its writes were rolled back with a job that failed after it.
    fn roll_back(&mut self);
    /// Answers the caller, given whether the group committed.
    fn finish(self: Box<Self>, committed: Result<(), &StoreError>);
}

struct PendingJob<T, F> {
    work: Option<F>,
    outcome: Option<Result<T>>,
    reply: oneshot::Sender<Result<T>>,
    weight: usize,
    class: Class,
    /// Runs on the result once committed (`Writer::run_as_then`).
    then: Option<fn(&mut T)>,
}

impl<T, F> Job for PendingJob<T, F>
where
    T: Send + 'static,
    F: FnOnce(&Connection) -> Result<T> + Send + 'static,
{
    fn weight(&self) -> usize {
        self.weight
    }

    fn class(&self) -> Class {
        self.class
    }

    fn run(&mut self, conn: &Connection) -> bool {
        let Some(work) = self.work.take() else {
            return false;
        };
        // A bug in one job must not take the writer (and every caller) down.
        let outcome = catch_unwind(AssertUnwindSafe(|| work(conn)))
            .unwrap_or_else(|_| Err(StoreError::internal("write job panicked")));
        let ok = outcome.is_ok();
        self.outcome = Some(outcome);
        ok
    }

    fn roll_back(&mut self) {
        self.outcome = Some(Err(StoreError::backend(
            ErrorKind::Contention,
            "rolled back with a failing write of the same group",
        )));
    }

    fn finish(self: Box<Self>, committed: Result<(), &StoreError>) {
        let answer = match (self.outcome, committed) {
            (Some(Err(e)), _) => Err(e),
            (Some(Ok(_)), Err(e)) | (None, Err(e)) => Err(StoreError::backend(
                e.kind().unwrap_or(ErrorKind::Internal),
                format!("group commit: {e}"),
            )),
            (Some(Ok(mut v)), Ok(())) => {
                if let Some(then) = self.then {
                    then(&mut v);
                }
                Ok(v)
            }
            (None, Ok(())) => Err(StoreError::internal("write job did not run")),
        };
        // The caller may have given up waiting; its data is committed anyway.
        let _ = self.reply.send(answer);
    }
}

fn writer_loop(
    conn: Connection,
    mut rx: mpsc::Receiver<Msg>,
    checkpointer: Checkpointer,
    limits: GroupLimits,
    counters: &Counters,
    window: Option<&Shared>,
) {
    let mut group: Vec<Box<dyn Job>> = Vec::new();
    while let Some(first) = rx.blocking_recv() {
        let mut closing = false;
        let mut weight = 0;
        let mut next = Some(first);
        while let Some(msg) = next.take() {
            match msg {
                Msg::Job(job) => {
                    weight += job.weight();
                    group.push(job);
                }
                Msg::Close => closing = true,
            }
            if weight < limits.max_weight && group.len() < limits.max_jobs {
                next = rx.try_recv().ok();
            }
        }
        let ingest: usize = group
            .iter()
            .filter(|j| j.class() == Class::Ingest)
            .map(|j| j.weight())
            .sum();
        counters
            .ingested
            .fetch_add(ingest as u64, Ordering::Relaxed);
        // A group of engine steps alone is the engine's own time, commit
        // included; in a mixed group the shared commit counts as others'.
        let others = group.iter().any(|j| j.class() != Class::Engine);
        let started = Instant::now();
        let changes_before = conn.total_changes();
        let (committed, engine) = commit_group(&conn, &mut group, window);
        let foreground = if others {
            started.elapsed().saturating_sub(engine)
        } else {
            Duration::ZERO
        };
        counters.foreground_micros.fetch_add(
            u64::try_from(foreground.as_micros()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        // A group that changed no row wrote nothing to the WAL (the delivery
        // dispatcher's claims find nothing due several times a second on an
        // idle store): no checkpoint to run, and no reason to put off the
        // idle WAL truncation.
        if committed && conn.total_changes() != changes_before {
            checkpointer.nudge();
        }
        if closing {
            // Refuse new jobs; the loop still drains what is queued.
            rx.close();
        }
    }
    checkpointer.stop();
    if let Err(e) = conn.execute_batch("PRAGMA optimize") {
        tracing::warn!(error = %e, "sqlite optimize at close failed");
    }
}

#[cfg(test)]
mod tests;
