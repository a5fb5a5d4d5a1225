//! The engine's own thread for its CPU work (parsing calls and profiles,
//! merging, evaluating, serialising), at a lower CPU priority than the rest
//! of the process.
//!
//! Why: the engine is a consumer of committed events and ingest never waits
//! for it. On a machine with spare CPU the engine runs at full speed; when
//! ingest saturates the CPU, the scheduler gives ingest the cores and the
//! engine catches up from its durable cursor once the burst is over, instead
//! of taking a share of ingest's throughput. Store calls stay where they are
//! (reader pool, writer thread, PostgreSQL connections).

#![allow(
    unsafe_code,
    reason = "getpriority(2)/setpriority(2) on the calling thread through libc; the standard library has no wrapper"
)]

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc;

use tokio::sync::oneshot;

use crate::error::ProfileError;

/// How much nicer the compute thread is than the process (Linux: `nice`
/// is a per-thread attribute). 10 leaves the engine about a tenth of a core
/// that a normal thread also wants.
pub const NICER_BY: i32 = 10;

type Job = Box<dyn FnOnce() + Send>;

/// Runs closures on the engine's compute thread; the thread ends when this
/// is dropped.
pub struct Compute {
    jobs: mpsc::Sender<Job>,
}

impl Compute {
    pub fn start() -> Result<Compute, ProfileError> {
        let (jobs, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("sluice-profiles".into())
            .spawn(move || {
                lower_priority();
                while let Ok(job) = rx.recv() {
                    // A panic fails that step only (its answer is dropped).
                    let _ = catch_unwind(AssertUnwindSafe(job));
                }
            })
            .map_err(|e| ProfileError::Compute(e.to_string()))?;
        Ok(Compute { jobs })
    }

    /// Runs `f` on the compute thread and waits for its result.
    pub async fn run<T, F>(&self, f: F) -> Result<T, ProfileError>
    where
        T: Send + 'static,
        F: FnOnce() -> T + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        self.jobs
            .send(Box::new(move || {
                let _ = tx.send(f());
            }))
            .map_err(|_| ProfileError::Compute("the compute thread stopped".into()))?;
        rx.await
            .map_err(|_| ProfileError::Compute("a compute job failed".into()))
    }
}

#[cfg(target_os = "linux")]
fn lower_priority() {
    // SAFETY: plain syscalls on the calling thread's own id; no memory is
    // shared with the kernel.
    let rc = unsafe {
        let tid = libc::gettid() as libc::id_t;
        // -1 is also a valid nice value; an error there only costs the
        // relative step.
        let current = libc::getpriority(libc::PRIO_PROCESS, tid);
        libc::setpriority(libc::PRIO_PROCESS, tid, (current + NICER_BY).min(19))
    };
    if rc != 0 {
        tracing::debug!("could not lower the profile engine's CPU priority");
    }
}

#[cfg(not(target_os = "linux"))]
fn lower_priority() {}
