//! Online backups of the embedded store (`sluice backup`).
//!
//! # Invariants
//! - **Consistent.** The copy is one `VACUUM INTO` from a read-only
//!   connection: one read transaction, so it holds exactly the writes
//!   committed when it began, every table at the same instant (events with
//!   their outbox rows, the profile engine's cursor with the profiles it
//!   has built).
//! - **Online.** In WAL mode a reader never blocks the writer: Sluice keeps
//!   ingesting and delivering while the copy runs. The WAL cannot be
//!   checkpointed past the copy's snapshot meanwhile, so it grows for as
//!   long as the copy takes, and shrinks after.
//! - **Never half a backup.** The copy is written to a hidden file beside
//!   the target, fsynced, checked (`PRAGMA quick_check`) and only then
//!   renamed into place, so a crash or a full disk leaves no file under the
//!   target's name. An existing target is never overwritten.
//! - **Private.** The copy holds destination secrets like the database, so
//!   it is created with mode `0600` on unix.
//!
//! # Layout
//! One SQLite file with no WAL beside it, compacted (free pages dropped),
//! with the schema version (`user_version`) of the database it came from.
//! Restoring is putting it in place as `<data_dir>/sluice.db` while Sluice
//! is stopped (docs/cli.md, "Backups").

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::Connection;

/// Why a backup was not made. No file is left under the target's name.
#[derive(Debug, thiserror::Error)]
pub enum BackupError {
    #[error("no Sluice database at {0}")]
    Missing(PathBuf),
    #[error("{0} exists: a backup never overwrites a file")]
    Exists(PathBuf),
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    #[error("copying: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("the copy fails its integrity check: {0}")]
    Check(String),
}

type Result<T> = std::result::Result<T, BackupError>;

/// What [`backup`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupReport {
    /// Size of the copy, in bytes.
    pub bytes: u64,
    /// The schema version the copy carries.
    pub schema_version: i64,
}

/// Copies the database at `db` to the new file `out`, online.
pub fn backup(db: &Path, out: &Path) -> Result<BackupReport> {
    let fail = |what: &str, source: std::io::Error| BackupError::Io {
        what: what.to_owned(),
        source,
    };
    if !db.is_file() {
        return Err(BackupError::Missing(db.to_owned()));
    }
    if out.exists() {
        return Err(BackupError::Exists(out.to_owned()));
    }
    let partial = partial_path(out)?;
    create_private(&partial).map_err(|e| fail(&format!("create {}", partial.display()), e))?;
    let written = copy_into(db, &partial).and_then(|version| {
        let file = File::open(&partial).map_err(|e| fail("reopen the copy", e))?;
        file.sync_all().map_err(|e| fail("fsync the copy", e))?;
        let bytes = file.metadata().map_err(|e| fail("stat the copy", e))?.len();
        Ok(BackupReport {
            bytes,
            schema_version: version,
        })
    });
    let report = match written {
        Ok(report) => report,
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            return Err(e);
        }
    };
    if let Err(e) = std::fs::rename(&partial, out) {
        let _ = std::fs::remove_file(&partial);
        return Err(fail(&format!("rename into {}", out.display()), e));
    }
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        // The rename is durable once the directory is.
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| fail("fsync the backup's directory", e))?;
    }
    Ok(report)
}

/// `VACUUM INTO` the empty file `partial`, then checks the copy; returns
/// its schema version.
fn copy_into(db: &Path, partial: &Path) -> Result<i64> {
    let source = Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    source.busy_timeout(Duration::from_secs(30))?;
    let target = partial.to_str().ok_or_else(|| BackupError::Io {
        what: format!("{}", partial.display()),
        source: std::io::Error::other("the backup path is not UTF-8"),
    })?;
    source.execute("VACUUM INTO ?1", [target])?;
    drop(source);
    let copy = Connection::open(partial)?;
    let check: String = copy.query_row("PRAGMA quick_check", [], |r| r.get(0))?;
    if check != "ok" {
        return Err(BackupError::Check(check));
    }
    Ok(copy.query_row("PRAGMA user_version", [], |r| r.get(0))?)
}

/// `.<name>.partial` beside `out`.
fn partial_path(out: &Path) -> Result<PathBuf> {
    let name = out.file_name().ok_or_else(|| BackupError::Io {
        what: format!("{}", out.display()),
        source: std::io::Error::other("names no file"),
    })?;
    let mut hidden = std::ffi::OsString::from(".");
    hidden.push(name);
    hidden.push(".partial");
    Ok(out.with_file_name(hidden))
}

/// An empty file only the owner can read (`VACUUM INTO` fills an empty
/// file, and would otherwise create it with the umask's permissions).
/// A partial file left by a crashed backup is replaced.
fn create_private(path: &Path) -> std::io::Result<()> {
    let mut options = OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        options.mode(0o600);
        options.open(path)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
    }
    #[cfg(not(unix))]
    options.open(path).map(|_| ())
}
