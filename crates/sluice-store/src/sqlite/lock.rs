//! One process per embedded database.
//!
//! # Why
//! SQLite lets a second process open the same file, and a second `sluice
//! serve` on the same data directory would run a second delivery engine,
//! profile engine and regulation job beside the first: the leases in the
//! database would keep the engines apart, but nothing else was meant to be
//! shared. And because another process *could* hold them, a restarted
//! process had to wait for its dead predecessor's leases to lapse (up to
//! 15 s of stalled profile work after `kill -9`, a minute for deliveries
//! in flight).
//!
//! # Invariant
//! While a store is open, its process holds an exclusive `flock` on
//! `<database>.lock`; a second open waits for it (`SqliteConfig::lock_wait`,
//! 60 s: an old process may still be finishing its sends), then fails
//! naming the file. The
//! lock belongs to the writer thread (the only writer), so it is held as
//! long as anything may still write, and the kernel drops it when the
//! process dies, `kill -9` included.
//!
//! # Recovery
//! A process that holds the lock knows every lease in the database belongs
//! to a process that is gone: [`release_dead_leases`] frees them at open,
//! so the profile engine, the regulation job and the deliveries a crashed
//! process had claimed resume at once. (A `flock` is separate from
//! SQLite's own POSIX locks on the database file, which closing another
//! descriptor of that file would drop: hence a file of its own.)

#![allow(
    unsafe_code,
    reason = "flock(2) through libc: the standard library's File::try_lock needs a newer Rust than rust-version"
)]

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::Connection;

use crate::error::ErrorKind;
use crate::{Result, StoreError};

/// The held lock; dropping it (or the process ending) releases it.
#[derive(Debug)]
pub(super) struct ProcessLock {
    _file: File,
}

/// The lock file beside `database`.
pub(super) fn lock_path(database: &Path) -> PathBuf {
    let mut name = database.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// Takes the exclusive lock for `database`, waiting up to `wait` while
/// another process holds it, or fails naming the lock file. The wait
/// covers a restart that does not wait for the old process to exit: a
/// stopping Sluice finishes its requests and the webhook sends in flight
/// first (`shutdown_grace_ms` of each, seconds), then exits and drops the
/// lock. Meanwhile the new process has bound its port, so connections wait
/// in its accept queue rather than being refused.
pub(super) fn acquire(database: &Path, wait: Duration) -> Result<ProcessLock> {
    let path = lock_path(database);
    let mut options = std::fs::OpenOptions::new();
    options.create(true).truncate(false).write(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let file = options.open(&path).map_err(|e| {
        StoreError::caused(
            ErrorKind::Unavailable,
            format!("open {}", path.display()),
            e,
        )
    })?;
    let started = Instant::now();
    let mut locked = try_lock(&file);
    let mut told = false;
    while matches!(&locked, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
        && started.elapsed() < wait
    {
        if !told && started.elapsed() >= Duration::from_secs(1) {
            told = true;
            tracing::info!(
                lock = %path.display(),
                wait_secs = wait.as_secs(),
                "another process holds the database; waiting for it to exit"
            );
        }
        std::thread::sleep(Duration::from_millis(20));
        locked = try_lock(&file);
    }
    locked.map_err(|e| match e.kind() {
        std::io::ErrorKind::WouldBlock => StoreError::backend(
            ErrorKind::Config,
            format!(
                "another Sluice process is using {} (it holds {}); stop it first, or give \
             this one a data directory of its own",
                database.display(),
                path.display()
            ),
        ),
        _ => StoreError::caused(
            ErrorKind::Unavailable,
            format!("lock {}", path.display()),
            e,
        ),
    })?;
    Ok(ProcessLock { _file: file })
}

#[cfg(unix)]
fn try_lock(file: &File) -> std::io::Result<()> {
    use std::os::unix::io::AsRawFd;
    // SAFETY: flock takes a descriptor this `File` owns and integer flags.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(not(unix))]
fn try_lock(_file: &File) -> std::io::Result<()> {
    Ok(())
}

/// Frees the leases of processes that are gone: the profile engine's, the
/// regulation job's, and the deliveries they had claimed. Only for a
/// process that holds the [`ProcessLock`].
pub(super) fn release_dead_leases(conn: &Connection) -> Result<()> {
    conn.execute_batch(
        "UPDATE profile_engine SET lease_owner = NULL, lease_until = NULL
             WHERE lease_owner IS NOT NULL;
         UPDATE regulation_engine SET lease_owner = NULL, lease_until = NULL
             WHERE lease_owner IS NOT NULL;
         UPDATE deliveries SET lease_until = NULL
             WHERE state = 'pending' AND lease_until IS NOT NULL;",
    )?;
    Ok(())
}
