//! The CPU time of a PostgreSQL server running on this machine: every
//! process of it is a child of the postmaster (backends, the WAL writer,
//! the checkpointer, autovacuum workers), so its total is the postmaster's
//! own time, plus that of the children it has reaped (`cutime`, `cstime`:
//! a backend whose connection closed), plus that of each live child.
//!
//! The postmaster is found from the backend serving the bench's own
//! connection (`pg_backend_pid()`, whose parent it is), so nothing depends
//! on where the data directory is. A server on another machine, or in
//! another PID namespace, is not found and its CPU is not reported.

use crate::resources::{ProcStat, proc_stat};

/// A local PostgreSQL server's postmaster.
#[derive(Debug, Clone, Copy)]
pub struct Server {
    postmaster: u32,
}

impl Server {
    /// The server whose backend `backend_pid` is, if that process is a
    /// PostgreSQL process on this machine whose parent is one too.
    pub fn of_backend(backend_pid: u32) -> Option<Server> {
        let backend = proc_stat(backend_pid).ok()?;
        let postmaster = proc_stat(backend.ppid).ok()?;
        (is_postgres(&backend) && is_postgres(&postmaster)).then_some(Server {
            postmaster: backend.ppid,
        })
    }

    /// CPU seconds the server has used since it started, as far as `/proc`
    /// tells: `None` once the postmaster is gone.
    pub fn cpu_secs(self) -> Option<f64> {
        let own = proc_stat(self.postmaster).ok()?.cpu_secs_with_reaped();
        let children: f64 = children(self.postmaster)
            .iter()
            .map(ProcStat::cpu_secs)
            .sum();
        Some(own + children)
    }
}

/// The server binary is `postgres` (`comm` keeps the executable's name when
/// a backend retitles itself).
fn is_postgres(stat: &ProcStat) -> bool {
    stat.comm == "postgres" || stat.comm == "postmaster"
}

/// Every live process whose parent is `parent`.
fn children(parent: u32) -> Vec<ProcStat> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| proc_stat(pid).ok())
        .filter(|stat| stat.ppid == parent)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_that_is_not_postgres_is_no_server() {
        assert!(Server::of_backend(std::process::id()).is_none());
    }
}
