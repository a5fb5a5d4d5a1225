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
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .with_context(|| format!("reading /proc/{pid}/stat"))?;
    // The command name (field 2) may contain spaces; fields resume after ')'.
    let rest = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .context("malformed /proc/<pid>/stat")?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After ')': state is field 3, so utime (14) and stime (15) sit at 11, 12.
    let ticks = |i: usize| -> anyhow::Result<u64> {
        fields
            .get(i)
            .and_then(|f| f.parse().ok())
            .context("malformed utime/stime in /proc/<pid>/stat")
    };
    let cpu_secs = (ticks(11)? + ticks(12)?) as f64 / clock_ticks_per_sec();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("reading /proc/{pid}/status"))?;
    let peak_kib = kib_field(&status, "VmHWM:").context("no VmHWM in /proc/<pid>/status")?;
    Ok(Usage {
        cpu_secs,
        peak_rss_bytes: peak_kib * 1024,
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
