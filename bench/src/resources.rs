//! Resource readings of the server process and the machine, from `/proc`
//! (Linux only, which is where the budget is defined).

use std::path::Path;
use std::process::Command;

use anyhow::Context;

/// A process's cumulative CPU time and its peak resident set so far.
#[derive(Debug, Clone, Copy)]
pub struct Usage {
    /// utime + stime, in seconds.
    pub cpu_secs: f64,
    /// `VmHWM`: the high-water mark of the resident set, in bytes.
    pub peak_rss_bytes: u64,
}

/// Reads `/proc/<pid>/stat` and `/proc/<pid>/status`.
pub fn usage(pid: u32) -> anyhow::Result<Usage> {
    let stat = proc_stat(pid)?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("reading /proc/{pid}/status"))?;
    let peak_kib = kib_field(&status, "VmHWM:").context("no VmHWM in /proc/<pid>/status")?;
    Ok(Usage {
        cpu_secs: stat.cpu_secs(),
        peak_rss_bytes: peak_kib * 1024,
    })
}

/// The fields of `/proc/<pid>/stat` the bench reads.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcStat {
    /// The executable's name (`comm`, at most 15 bytes).
    pub comm: String,
    pub ppid: u32,
    /// utime, stime, cutime and cstime in clock ticks: the process's own
    /// CPU time, and that of its children it has waited for.
    pub ticks: [u64; 4],
}

impl ProcStat {
    /// utime + stime, in seconds.
    pub fn cpu_secs(&self) -> f64 {
        (self.ticks[0] + self.ticks[1]) as f64 / clock_ticks_per_sec()
    }

    /// utime + stime + cutime + cstime, in seconds: with the children it
    /// has reaped.
    pub fn cpu_secs_with_reaped(&self) -> f64 {
        self.ticks.iter().sum::<u64>() as f64 / clock_ticks_per_sec()
    }
}

pub fn proc_stat(pid: u32) -> anyhow::Result<ProcStat> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .with_context(|| format!("reading /proc/{pid}/stat"))?;
    parse_stat(&stat).context("malformed /proc/<pid>/stat")
}

fn parse_stat(stat: &str) -> Option<ProcStat> {
    // The command name (field 2) may contain spaces and parentheses; the
    // fields resume after the last ')'.
    let (head, rest) = stat.rsplit_once(')')?;
    let (_, comm) = head.split_once('(')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After ')': state is field 3, so ppid (4) sits at 1 and utime, stime,
    // cutime, cstime (14-17) at 11-14.
    let number = |i: usize| fields.get(i).and_then(|f| f.parse::<i64>().ok());
    let ticks = |i: usize| number(i).map(|t| u64::try_from(t).unwrap_or(0));
    Some(ProcStat {
        comm: comm.to_owned(),
        ppid: u32::try_from(number(1)?).ok()?,
        ticks: [ticks(11)?, ticks(12)?, ticks(13)?, ticks(14)?],
    })
}

/// `VmRSS`: the resident set now, in bytes.
pub fn rss_bytes(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("reading /proc/{pid}/status"))?;
    let kib = kib_field(&status, "VmRSS:").context("no VmRSS in /proc/<pid>/status")?;
    Ok(kib * 1024)
}

/// `sysconf(_SC_CLK_TCK)` via `getconf`; 100 on every mainstream Linux.
fn clock_ticks_per_sec() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(100.0)
    })
}

/// A `Name:   123 kB` line's number.
fn kib_field(text: &str, name: &str) -> Option<u64> {
    text.lines()
        .find_map(|line| line.strip_prefix(name))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

/// Total size of the regular files under `dir`, recursively.
pub fn dir_bytes(dir: &Path) -> u64 {
    files_bytes(dir, &|_| true)
}

/// Bytes of SQLite write-ahead logs (`*-wal`) under `dir`.
pub fn wal_bytes(dir: &Path) -> u64 {
    files_bytes(dir, &|name| name.ends_with("-wal"))
}

/// Total size of the regular files under `dir` whose name `counts`.
fn files_bytes(dir: &Path, counts: &dyn Fn(&str) -> bool) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.metadata() {
            Ok(m) if m.is_dir() => files_bytes(&entry.path(), counts),
            Ok(m) if counts(&entry.file_name().to_string_lossy()) => m.len(),
            _ => 0,
        })
        .sum()
}

/// The machine the figures were measured on.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Machine {
    pub cores: usize,
    pub memory_mib: u64,
    pub cpu_model: String,
    pub kernel: String,
}

pub fn machine() -> Machine {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_owned())
        .unwrap_or_else(|| "unknown".into());
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .unwrap_or_else(|_| "unknown".into());
    Machine {
        cores: std::thread::available_parallelism().map_or(0, |n| n.get()),
        memory_mib: kib_field(&meminfo, "MemTotal:").unwrap_or(0) / 1024,
        cpu_model,
        kernel,
    }
}

/// The commit the measured binary was built from, as `sluice --version`
/// prints it (`sluice 0.1.0 (abc1234)`): the working directory's commit may
/// be another, when `--sluice` names a binary built elsewhere.
pub fn commit(sluice: &std::path::Path) -> String {
    Command::new(sluice)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|version| built_from(&version).map(str::to_owned))
        .unwrap_or_else(|| "unknown".into())
}

/// The commit in `sluice --version`'s output, between its parentheses.
fn built_from(version: &str) -> Option<&str> {
    let (_, rest) = version.split_once('(')?;
    let (commit, _) = rest.split_once(')')?;
    Some(commit.trim()).filter(|c| !c.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_commit_is_read_from_the_version_line() {
        assert_eq!(built_from("sluice 0.1.0 (abc1234)\n"), Some("abc1234"));
        assert_eq!(built_from("sluice 0.1.0\n"), None);
    }

    #[test]
    fn stat_fields_are_read_after_the_command_name() {
        let line = "42 (post gres) S 7 42 42 0 -1 4194560 10 0 0 0 \
                    120 30 5 6 20 0 1 0 100 1000 200";
        let stat = parse_stat(line).expect("parsed");
        assert_eq!(stat.comm, "post gres");
        assert_eq!(stat.ppid, 7);
        assert_eq!(stat.ticks, [120, 30, 5, 6]);
    }

    #[test]
    fn own_usage_is_readable() {
        let u = usage(std::process::id()).expect("usage of self");
        assert!(u.peak_rss_bytes > 0);
        assert!(u.cpu_secs >= 0.0);
    }

    #[test]
    fn kib_field_reads_the_number() {
        let text = "VmPeak:\t  1000 kB\nVmHWM:\t    512 kB\n";
        assert_eq!(kib_field(text, "VmHWM:"), Some(512));
        assert_eq!(kib_field(text, "VmRSS:"), None);
    }
}
