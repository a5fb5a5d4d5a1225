//! One group commit: the jobs of a group in one transaction, under
//! savepoints, and the message-id window's journal kept in step with what
//! commits (see `dedup`).

use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::{Class, Job};
use crate::StoreError;
use crate::sqlite::dedup::{self, Shared};

/// Runs `group` in one transaction and answers every job; returns whether
/// it committed, and the time the profile engine's jobs took in it. The
/// message-id window keeps the ids of a group that commits and loses
/// those of one that does not.
pub(super) fn commit_group(
    conn: &Connection,
    group: &mut Vec<Box<dyn Job>>,
    window: Option<&Shared>,
) -> (bool, Duration) {
    if group.is_empty() {
        return (false, Duration::ZERO);
    }
    let mut engine = Duration::ZERO;
    let committed = run_group(conn, group, &mut engine, window).map_err(|e| {
        tracing::error!(error = %e, jobs = group.len(), "sqlite group commit failed");
        // Ignored: fails only when no transaction is open, which is the goal.
        let _ = conn.execute_batch("ROLLBACK");
        StoreError::from(e)
    });
    if let Some(window) = window {
        let mut window = dedup::lock(window);
        match committed {
            Ok(()) => window.commit(),
            Err(_) => window.undo_to(0),
        }
    }
    for job in group.drain(..) {
        job.finish(committed.as_ref().map(|_| ()));
    }
    (committed.is_ok(), engine)
}

/// `engine` adds up the run time of the profile engine's jobs (the commit
/// they share is counted as everyone's).
fn run_group(
    conn: &Connection,
    group: &mut [Box<dyn Job>],
    engine: &mut Duration,
    window: Option<&Shared>,
) -> rusqlite::Result<()> {
    exec(conn, "BEGIN IMMEDIATE")?;
    let mut at = 0;
    while at < group.len() {
        let rest = &mut group[at..];
        let run = match rest[0].class() {
            Class::Ingest => rest
                .iter()
                .take_while(|j| j.class() == Class::Ingest)
                .count(),
            Class::Engine | Class::Other => 1,
        };
        at += run_under_savepoint(conn, &mut rest[..run], engine, window)?;
    }
    exec(conn, "COMMIT")
}

/// Runs `jobs` under one savepoint, up to and including the first that
/// fails, and returns how many it ran. When one fails, everything since the
/// savepoint is rolled back and the jobs before it are answered as rolled
/// back too; the caller runs the ones after it under a new savepoint, and
/// the ids they put in the message-id window are taken out again.
fn run_under_savepoint(
    conn: &Connection,
    jobs: &mut [Box<dyn Job>],
    engine: &mut Duration,
    window: Option<&Shared>,
) -> rusqlite::Result<usize> {
    exec(conn, "SAVEPOINT job")?;
    let mark = window.map(|w| dedup::lock(w).mark());
    let mut failed = None;
    for (n, job) in jobs.iter_mut().enumerate() {
        let started = Instant::now();
        let ok = job.run(conn);
        if job.class() == Class::Engine {
            *engine += started.elapsed();
        }
        if !ok {
            failed = Some(n);
            break;
        }
    }
    let ran = match failed {
        Some(n) => {
            exec(conn, "ROLLBACK TO job")?;
            if let (Some(window), Some(mark)) = (window, mark) {
                dedup::lock(window).undo_to(mark);
            }
            for job in &mut jobs[..n] {
                job.roll_back();
            }
            n + 1
        }
        None => jobs.len(),
    };
    exec(conn, "RELEASE job")?;
    Ok(ran)
}

pub(super) fn exec(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(|_| ())
}
